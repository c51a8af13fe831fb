package jobengine

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// status.error of a FlinkDeployment or a FlinkSessionJob is, as upstream
// writes it, the JSON of one FlinkResourceException:
//
//	{"type":"org.apache.flink.kubernetes.operator.exception.ValidationException",
//	 "message":"...","additionalMetadata":{},"throwableList":[]}
//
// shaped by the five kubernetes.operator.exception.* options (config.KeyException...), read
// from the operator configuration (upstream's FlinkOperatorConfiguration,
// not a resource's flinkConfiguration).
const (
	defaultExceptionFieldMaxLength        = 2048
	defaultExceptionStackTraceMaxLength   = 2048
	defaultExceptionThrowableListMaxCount = 2
)

// Upstream's exception classes a reason maps to.
const (
	exceptionPackage = "org.apache.flink.kubernetes.operator.exception."
	// typeValidation is what spec and configuration errors are.
	typeValidation = exceptionPackage + "ValidationException"
	// typeDeploymentFailed is what failing pods are (upstream's
	// DeploymentFailedException, with the Kubernetes reason in
	// additionalMetadata.reason).
	typeDeploymentFailed = exceptionPackage + "DeploymentFailedException"
	// typeUpgradeFailure is what a job that cannot be upgraded is.
	typeUpgradeFailure = exceptionPackage + "UpgradeFailureException"
	// typeReconciliation is every other error.
	typeReconciliation = exceptionPackage + "ReconciliationException"
)

// deploymentFailureReasons are the reasons of the errors upstream raises
// as DeploymentFailedException: its container error reasons, and a pod
// that cannot be scheduled.
var deploymentFailureReasons = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true, "RunContainerError": true,
	"CreateContainerConfigError": true, "OOMKilled": true, "Unschedulable": true,
}

// exceptionType is upstream's exception class for an error of reason.
func exceptionType(reason string) string {
	switch {
	case reason == reasons.ReasonValidationError:
		return typeValidation
	case reason == reasons.ReasonUpgradeFailed:
		return typeUpgradeFailure
	case deploymentFailureReasons[reason]:
		return typeDeploymentFailed
	}
	return typeReconciliation
}

// ResourceException is upstream's FlinkResourceException, the JSON in
// status.error. Fields are in upstream's order; absent ones are omitted,
// as Jackson's NON_NULL does.
type ResourceException struct {
	Type               string         `json:"type,omitempty"`
	Message            string         `json:"message,omitempty"`
	StackTrace         string         `json:"stackTrace,omitempty"`
	AdditionalMetadata map[string]any `json:"additionalMetadata"`
	// ThrowableList is the causes; nil (omitted) in the causes themselves,
	// present (maybe []) at the top, as upstream.
	ThrowableList *[]ResourceException `json:"throwableList,omitempty"`
}

// ParseError decodes status.error; ok is false when it is not upstream's
// JSON (a plain message, as older versions of the operator wrote).
func ParseError(statusError string) (ResourceException, bool) {
	var e ResourceException
	s := strings.TrimSpace(statusError)
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &e) != nil {
		return ResourceException{}, false
	}
	return e, true
}

// ErrorMessage is the message of status.error: the message of its JSON,
// or status.error itself when it is not JSON.
func ErrorMessage(statusError string) string {
	if e, ok := ParseError(statusError); ok {
		return e.Message
	}
	return statusError
}

// exceptionOptions are the five options, with upstream's defaults for
// unset or invalid values.
type exceptionOptions struct {
	fieldMax, stackMax, throwableMax int
	stackTrace                       bool
	labels                           []labelRule // sorted by pattern, for a stable status
}

type labelRule struct {
	re    *regexp.Regexp
	label string
}

func readExceptionOptions(cfg config.Config) exceptionOptions {
	intOr := func(key string, def int) int {
		if n, ok, err := cfg.OptionalInt(key); err == nil && ok {
			return n
		}
		return def
	}
	o := exceptionOptions{
		fieldMax:     max(0, intOr(config.KeyExceptionFieldMaxLength, defaultExceptionFieldMaxLength)),
		stackMax:     max(0, intOr(config.KeyExceptionStackTraceMaxLength, defaultExceptionStackTraceMaxLength)),
		throwableMax: max(0, intOr(config.KeyExceptionThrowableListMaxCount, defaultExceptionThrowableListMaxCount)),
	}
	o.stackTrace, _ = cfg.Bool(config.KeyExceptionStackTraceEnabled)
	m, _ := cfg.Map(config.KeyExceptionLabelMapper)
	patterns := make([]string, 0, len(m))
	for p := range m {
		patterns = append(patterns, p)
	}
	sort.Strings(patterns)
	for _, p := range patterns {
		// A pattern RE2 cannot compile is skipped (upstream's Java
		// regex would fail the whole rendering).
		if re, err := regexp.Compile(p); err == nil {
			o.labels = append(o.labels, labelRule{re, m[p]})
		}
	}
	return o
}

// truncate keeps the first n characters of s (runes; upstream counts
// UTF-16 units).
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// renderError is status.error for errs: one exception, as upstream has
// one per reconciliation. Its type, stack trace, reason and causes are
// the first error's; its message joins every error's message with "; ",
// so that none is lost.
func renderError(errs []syncError, o exceptionOptions) string {
	if len(errs) == 0 {
		return ""
	}
	first := errs[0]
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, e.msg)
	}
	message := strings.Join(msgs, "; ")
	typ := first.typ
	if typ == "" {
		typ = exceptionType(first.reason)
	}
	top := ResourceException{
		Type:               truncate(typ, o.fieldMax),
		Message:            truncate(message, o.fieldMax),
		AdditionalMetadata: map[string]any{},
	}
	if o.stackTrace && first.stack != "" {
		top.StackTrace = truncate(first.stack, o.stackMax)
	}
	reason := first.metaReason
	if reason == "" && typ == typeDeploymentFailed {
		reason = first.reason
	}
	if reason != "" {
		top.AdditionalMetadata["reason"] = truncate(reason, o.fieldMax)
	}
	// Labels: a pattern found in the message of the exception or of one
	// of its causes (upstream's ExceptionUtils.findThrowable).
	chain := []string{message}
	for _, c := range first.causes {
		chain = append(chain, c.Message)
	}
	addLabels(top.AdditionalMetadata, chain, o)
	causes := []ResourceException{}
	for i, c := range first.causes {
		if i >= o.throwableMax {
			break
		}
		cause := ResourceException{
			Type:               truncate(c.Type, o.fieldMax),
			Message:            truncate(c.Message, o.fieldMax),
			AdditionalMetadata: map[string]any{},
		}
		for k, v := range c.AdditionalMetadata {
			if k != "labels" {
				cause.AdditionalMetadata[k] = v
			}
		}
		rest := []string{}
		for _, d := range first.causes[i:] {
			rest = append(rest, d.Message)
		}
		addLabels(cause.AdditionalMetadata, rest, o)
		causes = append(causes, cause)
	}
	top.ThrowableList = &causes
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // Jackson writes <, > and & as they are
	if err := enc.Encode(top); err != nil {
		return message // upstream's fallback: the plain message
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func addLabels(meta map[string]any, messages []string, o exceptionOptions) {
	var labels []string
	for _, r := range o.labels {
		for _, m := range messages {
			if r.re.MatchString(m) {
				labels = append(labels, r.label)
				break
			}
		}
	}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
}

// keptError is the error of a sync that keeps status.error as it was:
// its exception decoded, so that it renders the same again.
func keptError(reason, prev string) syncError {
	e, ok := ParseError(prev)
	if !ok {
		return syncError{reason: reason, msg: prev}
	}
	return exceptionError(reason, e)
}

func exceptionError(reason string, e ResourceException) syncError {
	se := syncError{reason: reason, msg: e.Message, typ: e.Type, stack: e.StackTrace}
	if r, ok := e.AdditionalMetadata["reason"].(string); ok {
		se.metaReason = r
	}
	if e.ThrowableList != nil {
		se.causes = *e.ThrowableList
	}
	return se
}

// failException records an error that has its own exception, such as
// Flink's cause of a job failure (upstream writes a FAILED job's
// SerializedThrowable): its type, message, stack trace (shown with
// exception.stacktrace.enabled) and causes (throwableList) go into
// status.error as they are. Its Warning event is as Fail's.
func (s *State[T, S]) failException(reason string, e ResourceException) {
	s.errs = append(s.errs, exceptionError(reason, e))
}
