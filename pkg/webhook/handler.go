package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"

	"github.com/flinkops/flink-operator/pkg/metrics"
)

// ValidatePath is where the API server sends AdmissionReviews to validate.
const ValidatePath = "/validate"

// MutatePath is where the API server sends AdmissionReviews of the mutating
// step, which stamps reviewed cross-namespace references (stamp.go).
const MutatePath = "/mutate"

// maxBodyBytes bounds a request body: an AdmissionReview carries the object
// and, on UPDATE, the old one, each at most etcd's ~1.5 MiB.
const maxBodyBytes = 8 << 20

// reviewAPIVersions are the AdmissionReview versions understood; the answer
// uses the request's. v1beta1 has the same shape and is accepted for API
// servers still configured to send it.
var reviewAPIVersions = map[string]bool{
	"admission.k8s.io/v1":      true,
	"admission.k8s.io/v1beta1": true,
}

// Handler returns the webhook's HTTP handler: POST ValidatePath and
// POST MutatePath.
func (v *Validator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(ValidatePath, v)
	mux.HandleFunc(MutatePath, func(w http.ResponseWriter, r *http.Request) { serveReview(w, r, "mutate", v.Mutate) })
	return mux
}

// ServeHTTP answers one AdmissionReview of the validating step.
func (v *Validator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveReview(w, r, "validate", v.Review)
}

// serveReview answers one AdmissionReview with decide. A body that is not
// one gets 400 with the reason in plain text (there is no request uid to
// answer to); every decision, including a denial, is a 200 with an
// AdmissionReview, counted by step (metrics.WebhookRequest).
func serveReview(w http.ResponseWriter, r *http.Request, step string, decide func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	logger := klog.FromContext(r.Context())
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "the admission webhook accepts only POST", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			http.Error(w, fmt.Sprintf("unsupported Content-Type %q: want application/json", ct), http.StatusUnsupportedMediaType)
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	review, err := decodeReview(body)
	if err != nil {
		logger.V(2).Info("Bad admission request", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := decide(r.Context(), review.Request)
	metrics.WebhookRequest(step, string(review.Request.Operation), review.Request.Kind.Kind, resp.Allowed)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	data, err := json.Marshal(out)
	if err != nil { // cannot happen for these types
		http.Error(w, "encoding AdmissionReview: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// decodeReview parses a request body into an AdmissionReview with a request.
func decodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	if len(body) == 0 {
		return nil, errors.New("empty request body: want an admission.k8s.io/v1 AdmissionReview")
	}
	review := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, review); err != nil {
		return nil, fmt.Errorf("decoding AdmissionReview: %w", err)
	}
	if review.Kind != "AdmissionReview" || !reviewAPIVersions[review.APIVersion] {
		return nil, fmt.Errorf("got apiVersion %q kind %q: want an admission.k8s.io/v1 AdmissionReview", review.APIVersion, review.Kind)
	}
	if review.Request == nil {
		return nil, errors.New("AdmissionReview has no request")
	}
	if review.Request.UID == "" {
		return nil, errors.New("AdmissionReview request has no uid")
	}
	return review, nil
}
