package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/canary"
	"github.com/flinkops/flink-operator/pkg/config"
	authorizationv1client "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/authorization/v1"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

// Options configure a Validator.
type Options struct {
	// Config is the operator-wide configuration: defaults of every
	// resource's configuration, and the cross-namespace switch. Used when
	// CurrentConfig is nil; nil means the defaults.
	Config config.Config
	// CurrentConfig, when set, returns the operator configuration in use
	// now (the operator's live configuration, which a reloaded config file
	// replaces): each admission reads it once, so the webhook judges with
	// what the controllers act on.
	CurrentConfig func() config.Config
	// Lookup finds snapshot targets and session clusters.
	Lookup Lookup
	// AccessReviews authorizes cross-namespace snapshot references; nil
	// refuses them (there is no way to check the user's rights).
	AccessReviews authorizationv1client.SubjectAccessReviewInterface
	// AccessReviewTimeout bounds one SubjectAccessReview; default 5 s, well
	// inside the API server's webhook timeout.
	AccessReviewTimeout time.Duration
	// ReviewKeys sign the stamp the mutating step puts on an object whose
	// cross-namespace reference its SubjectAccessReview allowed
	// (pkg/reviewstamp); nil or empty refuses such references, since
	// the controllers would never act on them unstamped.
	ReviewKeys reviewstamp.Keys
	// Clock dates stamps; the real clock when nil.
	Clock clock.PassiveClock
}

// Validator decides AdmissionReviews. It is safe for concurrent use.
type Validator struct {
	config        func() config.Config
	lookup        Lookup
	reviews       authorizationv1client.SubjectAccessReviewInterface
	reviewTimeout time.Duration
	reviewKeys    reviewstamp.Keys
	clock         clock.PassiveClock
}

// NewValidator returns a Validator; without CurrentConfig, it judges
// with Config (nil: the defaults).
func NewValidator(opts Options) *Validator {
	if opts.CurrentConfig == nil {
		fixed := opts.Config
		if fixed == nil {
			fixed = config.Defaults()
		}
		opts.CurrentConfig = func() config.Config { return fixed }
	}
	if opts.AccessReviewTimeout <= 0 {
		opts.AccessReviewTimeout = 5 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Validator{config: opts.CurrentConfig, lookup: opts.Lookup, reviews: opts.AccessReviews, reviewTimeout: opts.AccessReviewTimeout,
		reviewKeys: opts.ReviewKeys, clock: opts.Clock}
}

// Review decides one admission request. CREATE and UPDATE of the four
// kinds are validated; every other operation (DELETE, CONNECT) and
// subresource is allowed, since nothing about them can break a rule.
func (v *Validator) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	logger := klog.FromContext(ctx).WithValues("uid", req.UID, "kind", req.Kind.Kind, "object", klog.KRef(req.Namespace, req.Name),
		"operation", req.Operation, "user", req.UserInfo.Username)
	ctx = klog.NewContext(ctx, logger)
	defer func() {
		// A bug must cost one request (denied with a message), not the
		// connection: failurePolicy Fail would turn it into an opaque error.
		if r := recover(); r != nil {
			logger.Error(fmt.Errorf("%v", r), "Panic while validating")
			resp = deny(http.StatusInternalServerError, fmt.Sprintf("internal error in the flink-operator webhook while validating %s: %v", req.Kind.Kind, r))
		}
		switch {
		case resp.Allowed:
			logger.V(4).Info("Admitted")
		default:
			logger.V(1).Info("Denied", "code", resp.Result.Code, "message", resp.Result.Message)
		}
	}()

	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return allow(nil)
	}
	if req.SubResource != "" {
		return allow(nil)
	}
	if req.Kind.Group != v1beta1.GroupName {
		return deny(http.StatusForbidden, "Unexpected resource: "+req.Kind.Kind)
	}
	if req.Kind.Kind != "FlinkStateSnapshot" && canary.IsJSON(req.Object.Raw) {
		return allow(nil) // a canary resource is never deployed (pkg/canary): as upstream, not validated
	}
	// One configuration for the whole admission, even if it is reloaded
	// meanwhile.
	cfg := v.config()
	switch req.Kind.Kind {
	case "FlinkDeployment":
		return v.deployment(ctx, req, cfg)
	case "FlinkSessionJob":
		return v.sessionJob(ctx, req, cfg)
	case "FlinkStateSnapshot":
		return v.snapshot(ctx, req, cfg)
	case "FlinkBlueGreenDeployment":
		return v.blueGreen(req, cfg)
	}
	return deny(http.StatusForbidden, "Unexpected resource: "+req.Kind.Kind)
}

// object is what the kinds have in common.
type object interface {
	v1beta1.FlinkDeployment | v1beta1.FlinkSessionJob | v1beta1.FlinkStateSnapshot | v1beta1.FlinkBlueGreenDeployment
}

// decodeObjects decodes request.object and, on UPDATE, request.oldObject.
// A failure is a denial with 400: the API server sent something that is
// not the kind it named.
func decodeObjects[T object](req *admissionv1.AdmissionRequest) (cur, old *T, resp *admissionv1.AdmissionResponse) {
	cur, err := decodeObject[T](req, req.Object, "object")
	if err != nil {
		return nil, nil, deny(http.StatusBadRequest, err.Error())
	}
	if req.Operation == admissionv1.Update {
		if old, err = decodeObject[T](req, req.OldObject, "oldObject"); err != nil {
			return nil, nil, deny(http.StatusBadRequest, err.Error())
		}
	}
	return cur, old, nil
}

func decodeObject[T object](req *admissionv1.AdmissionRequest, raw runtime.RawExtension, field string) (*T, error) {
	if len(raw.Raw) == 0 {
		return nil, fmt.Errorf("request.%s is empty: want a %s", field, req.Kind.Kind)
	}
	out := new(T)
	if err := json.Unmarshal(raw.Raw, out); err != nil {
		return nil, fmt.Errorf("decoding request.%s as %s: %v", field, req.Kind.Kind, err)
	}
	// The API server fills both in before validating admission; the
	// request's own are the fallback, so the rules never see "".
	meta := any(out).(metav1.Object)
	if meta.GetNamespace() == "" {
		meta.SetNamespace(req.Namespace)
	}
	if meta.GetName() == "" {
		meta.SetName(req.Name)
	}
	return out, nil
}

// sameJSON reports whether two specs are the same once encoded, the way
// the API server stores them.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// notSynced is the answer while the informer caches are still filling:
// "not found" would be a lie, so the user is asked to retry.
func (v *Validator) notSynced() *admissionv1.AdmissionResponse {
	if s, ok := v.lookup.(syncer); ok && !s.HasSynced() {
		return deny(http.StatusServiceUnavailable, "the flink-operator webhook is starting and its caches are not filled yet: retry in a few seconds")
	}
	return nil
}

func allow(warnings []config.Warning) *admissionv1.AdmissionResponse {
	return allowWarning("spec.flinkConfiguration", warnings)
}

// allowWarning admits with warnings about the configuration at field.
func allowWarning(field string, warnings []config.Warning) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	for _, w := range warnings {
		resp.Warnings = append(resp.Warnings, field+": "+w.String())
	}
	return resp
}

func deny(code int32, message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    code,
			Reason:  reasonFor(code),
			Message: message,
		},
	}
}

func reasonFor(code int32) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	}
	return metav1.StatusReasonInternalError
}
