package jobengine

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// status.error is upstream's FlinkResourceException JSON, shaped by the
// kubernetes.operator.exception.* options.
func TestRenderError(t *testing.T) {
	flinkFailure := syncError{reason: "JobException", msg: "Job failed", typ: "org.apache.flink.util.SerializedThrowable",
		stack: "org.apache.flink.runtime.JobException: Job failed\n\tat Foo.bar(Foo.java:1)",
		causes: []ResourceException{
			{Type: "java.lang.RuntimeException", Message: "wrapped: disk full", AdditionalMetadata: map[string]any{}},
			{Type: "java.io.IOException", Message: "disk full", AdditionalMetadata: map[string]any{}},
			{Type: "java.io.IOException", Message: "third", AdditionalMetadata: map[string]any{}},
		}}
	for _, tc := range []struct {
		name string
		cfg  config.Config
		errs []syncError
		want string
	}{{
		name: "no error: empty",
	}, {
		name: "a validation error",
		errs: []syncError{{reason: reasons.ReasonValidationError, msg: `spec.job.jarURI "x" <is> & bad`}},
		want: `{"type":"org.apache.flink.kubernetes.operator.exception.ValidationException","message":"spec.job.jarURI \"x\" <is> & bad","additionalMetadata":{},"throwableList":[]}`,
	}, {
		name: "a failing pod: DeploymentFailedException with its reason",
		errs: []syncError{{reason: "CrashLoopBackOff", msg: "JobManager pod p: CrashLoop"}},
		want: `{"type":"org.apache.flink.kubernetes.operator.exception.DeploymentFailedException","message":"JobManager pod p: CrashLoop","additionalMetadata":{"reason":"CrashLoopBackOff"},"throwableList":[]}`,
	}, {
		name: "an upgrade failure",
		errs: []syncError{{reason: reasons.ReasonUpgradeFailed, msg: "cannot"}},
		want: `{"type":"org.apache.flink.kubernetes.operator.exception.UpgradeFailureException","message":"cannot","additionalMetadata":{},"throwableList":[]}`,
	}, {
		name: "several errors: the first's type, every message",
		errs: []syncError{{reason: reasons.ReasonCleanup, msg: "one"}, {reason: reasons.ReasonValidationError, msg: "two"}},
		want: `{"type":"org.apache.flink.kubernetes.operator.exception.ReconciliationException","message":"one; two","additionalMetadata":{},"throwableList":[]}`,
	}, {
		name: "field.max.length cuts type and message",
		cfg:  config.Config{config.KeyExceptionFieldMaxLength: "6"},
		errs: []syncError{{reason: "OOMKilled", msg: "héllo world"}},
		want: `{"type":"org.ap","message":"héllo ","additionalMetadata":{"reason":"OOMKil"},"throwableList":[]}`,
	}, {
		name: "causes: two by default, no stack trace by default",
		errs: []syncError{flinkFailure},
		want: `{"type":"org.apache.flink.util.SerializedThrowable","message":"Job failed","additionalMetadata":{},"throwableList":[` +
			`{"type":"java.lang.RuntimeException","message":"wrapped: disk full","additionalMetadata":{}},` +
			`{"type":"java.io.IOException","message":"disk full","additionalMetadata":{}}]}`,
	}, {
		name: "throwable.list.max.count and stacktrace options",
		cfg: config.Config{config.KeyExceptionThrowableListMaxCount: "1", config.KeyExceptionStackTraceEnabled: "true",
			config.KeyExceptionStackTraceMaxLength: "40"},
		errs: []syncError{flinkFailure},
		want: `{"type":"org.apache.flink.util.SerializedThrowable","message":"Job failed","stackTrace":"org.apache.flink.runtime.JobException: J","additionalMetadata":{},"throwableList":[` +
			`{"type":"java.lang.RuntimeException","message":"wrapped: disk full","additionalMetadata":{}}]}`,
	}, {
		name: "label.mapper: a label per pattern found in the exception or its causes",
		cfg:  config.Config{config.KeyExceptionLabelMapper: `disk.*full:storage,^Job:job,nomatch:never,wrapped:wrap`},
		errs: []syncError{flinkFailure},
		want: `{"type":"org.apache.flink.util.SerializedThrowable","message":"Job failed","additionalMetadata":{"labels":["job","storage","wrap"]},"throwableList":[` +
			`{"type":"java.lang.RuntimeException","message":"wrapped: disk full","additionalMetadata":{"labels":["storage","wrap"]}},` +
			`{"type":"java.io.IOException","message":"disk full","additionalMetadata":{"labels":["storage"]}}]}`,
	}, {
		name: "invalid values fall back to the defaults",
		cfg:  config.Config{config.KeyExceptionFieldMaxLength: "x", config.KeyExceptionStackTraceEnabled: "yes", config.KeyExceptionLabelMapper: "(:bad"},
		errs: []syncError{{reason: "X", msg: "m"}},
		want: `{"type":"org.apache.flink.kubernetes.operator.exception.ReconciliationException","message":"m","additionalMetadata":{},"throwableList":[]}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderError(tc.errs, readExceptionOptions(tc.cfg))
			if got != tc.want {
				t.Errorf("status.error\n got %s\nwant %s", got, tc.want)
			}
			if tc.want != "" && ErrorMessage(got) == got {
				t.Errorf("ErrorMessage did not decode %s", got)
			}
		})
	}
}

// A kept status.error renders the same again, whatever it holds.
func TestKeptErrorRoundTrip(t *testing.T) {
	o := readExceptionOptions(config.Config{config.KeyExceptionStackTraceEnabled: "true", config.KeyExceptionLabelMapper: "full:storage"})
	for _, prev := range []string{
		renderError([]syncError{{reason: "CrashLoopBackOff", msg: `pod "a"` + "\nline two"}}, o),
		renderError([]syncError{{reason: "X", msg: "Job failed", typ: "T", stack: "trace", causes: []ResourceException{
			{Type: "C", Message: "disk full", AdditionalMetadata: map[string]any{"httpResponseCode": float64(500)}}}}}, o),
	} {
		if got := renderError([]syncError{keptError("SavepointError", prev)}, o); got != prev {
			t.Errorf("kept error\n got %s\nwant %s", got, prev)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "",
		"plain; message":              "plain; message",
		"{not json":                   "{not json",
		`{"message":"a \"q\"\nb"}`:    "a \"q\"\nb",
		`  {"type":"T","message":""}`: "",
	} {
		if got := ErrorMessage(in); got != want {
			t.Errorf("ErrorMessage(%q) = %q, want %q", in, got, want)
		}
	}
	if !strings.Contains(ErrorMessage(renderError([]syncError{{msg: `say "hi"`}}, readExceptionOptions(nil))), `say "hi"`) {
		t.Error("a message with quotes does not survive the JSON")
	}
}

// failException keeps the exception's type, stack trace and causes.
func TestFailException(t *testing.T) {
	d := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	e := &Engine[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]{Operator: func() config.Config { return config.Config{config.KeyExceptionStackTraceEnabled: "true"} }}
	s, err := e.NewState(context.Background(), "ns/a", d, now)
	if err != nil {
		t.Fatal(err)
	}
	causes := []ResourceException{{Type: "java.io.IOException", Message: "disk full"}}
	s.failException("JobException", ResourceException{Type: "org.apache.flink.util.SerializedThrowable", Message: "Job failed",
		StackTrace: "trace", ThrowableList: &causes})
	s.SetError()
	want := `{"type":"org.apache.flink.util.SerializedThrowable","message":"Job failed","stackTrace":"trace","additionalMetadata":{},` +
		`"throwableList":[{"type":"java.io.IOException","message":"disk full","additionalMetadata":{}}]}`
	if got := *s.Status().Error; got != want {
		t.Errorf("status.error\n got %s\nwant %s", got, want)
	}
}

// Each sync renders status.error with the operator configuration in use
// when it started (Engine.Operator, the live configuration): a reload
// changes the next sync's rendering, never the one under way.
func TestErrorOptionsFromTheConfigurationInUse(t *testing.T) {
	d := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	inUse := config.Config{}
	e := &Engine[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]{Operator: func() config.Config { return inUse }}
	render := func(s *State[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]) string {
		t.Helper()
		s.failException("JobException", ResourceException{Type: "org.apache.flink.util.SerializedThrowable", Message: "Job failed", StackTrace: "trace"})
		s.SetError()
		return *s.Status().Error
	}
	const plain = `{"type":"org.apache.flink.util.SerializedThrowable","message":"Job failed","additionalMetadata":{},"throwableList":[]}`
	const withTrace = `{"type":"org.apache.flink.util.SerializedThrowable","message":"Job failed","stackTrace":"trace","additionalMetadata":{},"throwableList":[]}`

	under := e.mustState(t, d)
	inUse = config.Config{config.KeyExceptionStackTraceEnabled: "true"} // reloaded during the sync
	if got := render(under); got != plain {
		t.Errorf("sync under way at the reload:\n got %s\nwant %s", got, plain)
	}
	if got := render(e.mustState(t, d)); got != withTrace {
		t.Errorf("next sync:\n got %s\nwant %s", got, withTrace)
	}
	if got := render((&Engine[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]{}).mustState(t, d)); got != plain {
		t.Errorf("no Operator (defaults):\n got %s\nwant %s", got, plain)
	}
}

func (e *Engine[T, S]) mustState(t *testing.T, o T) *State[T, S] {
	t.Helper()
	s, err := e.NewState(context.Background(), "ns/a", o, now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
