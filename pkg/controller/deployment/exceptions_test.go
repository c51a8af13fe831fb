package deployment

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

func jobExceptionEvents(events []string) []string {
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e, corev1.EventTypeWarning+" "+reasons.ReasonJobException+" ") {
			out = append(out, e)
		}
	}
	return out
}

// A job failure becomes one Warning JobException event with the first
// lines of its stack trace; later syncs, and a restarted operator that
// finds the event already recorded, do not repeat it. A steady job costs
// no exceptions request.
func TestJobExceptionEvents(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.application("app", v1beta1.UpgradeModeSavepoint))
	f.Events()
	p := f.jm("app")
	p.ResetRequests()
	f.MustSync("app")
	for _, r := range p.Requests() {
		if strings.Contains(r.Path, "/exceptions") {
			t.Errorf("steady job: %s %s", r.Method, r.Path)
		}
	}

	f.Clock.Step(time.Second)
	failedAt := f.Clock.Now()
	if err := p.FailJob(p.jobID, "java.lang.IllegalStateException", "boom in the map function"); err != nil {
		t.Fatal(err)
	}
	f.MustSync("app")
	got := jobExceptionEvents(f.Events())
	if len(got) != 1 || !strings.Contains(got[0], "java.lang.IllegalStateException: boom in the map function") || strings.Count(got[0], "\n") != 4 {
		t.Fatalf("JobException events %q, want one with the 5 lines of the trace", got)
	}
	f.Clock.Step(time.Second)
	f.MustSync("app")
	if got := jobExceptionEvents(f.Events()); len(got) != 0 {
		t.Errorf("repeated: %q", got)
	}

	// A new operator process: the event it finds says the exception was
	// reported.
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "app.1", Namespace: ns, Annotations: map[string]string{
			AnnotationExceptionTimestamp: failedAt.UTC().Format(time.RFC3339Nano),
		}},
		InvolvedObject: corev1.ObjectReference{Kind: "FlinkDeployment", Name: "app", Namespace: ns, UID: f.Get("app").UID},
		Reason:         reasons.ReasonJobException, Type: corev1.EventTypeWarning,
	}
	if _, err := f.Kube.CoreV1().Events(ns).Create(f.Ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Restart()
	f.MustSync("app")
	if got := jobExceptionEvents(f.Events()); len(got) != 0 {
		t.Errorf("repeated after a restart: %q", got)
	}

	// The next failure is reported, with stacktrace-lines lines.
	f.Config[config.KeyEventsExceptionsStacktraceLines] = "2"
	f.Restart()
	f.MustSync("app") // reads the events again: nothing new
	f.Events()
	f.Clock.Step(time.Second)
	if err := p.FailJob(p.jobID, "java.io.IOException", "disk full"); err != nil {
		t.Fatal(err)
	}
	f.MustSync("app")
	got = jobExceptionEvents(f.Events())
	if len(got) != 1 || !strings.Contains(got[0], "java.io.IOException: disk full") || !strings.Contains(got[0], "\n... (3 more lines)") || !strings.Contains(got[0], AnnotationExceptionTimestamp+":") {
		t.Errorf("second failure: %q", got)
	}
}

// At most limit-per-reconciliation events per sync, newest first.
func TestJobExceptionEventsLimit(t *testing.T) {
	f := newFixture(t)
	f.Config[config.KeyEventsExceptionsLimit] = "3"
	f.Restart()
	f.Deploy(f.application("app", v1beta1.UpgradeModeSavepoint))
	f.Events()
	p := f.jm("app")
	for i := range 5 {
		f.Clock.Step(time.Second)
		if err := p.FailJob(p.jobID, "java.lang.RuntimeException", "failure "+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	f.MustSync("app")
	got := jobExceptionEvents(f.Events())
	if len(got) != 3 || !strings.Contains(got[0], "failure e") || !strings.Contains(got[2], "failure c") {
		t.Errorf("events %q, want failures e, d, c", got)
	}
}

// Upstream's default limit, 10 per sync, applies without configuration; a
// value that does not parse (only possible when a test bypasses the
// operator's start-up validation) counts as the default too.
func TestJobExceptionEventsDefaultLimit(t *testing.T) {
	for _, value := range []string{"", "many"} {
		t.Run("value="+value, func(t *testing.T) {
			f := newFixture(t)
			if value != "" {
				f.Config[config.KeyEventsExceptionsLimit] = value
				f.Restart()
			}
			f.Deploy(f.application("app", v1beta1.UpgradeModeSavepoint))
			f.Events()
			p := f.jm("app")
			for i := range 12 {
				f.Clock.Step(time.Second)
				if err := p.FailJob(p.jobID, "java.lang.RuntimeException", "failure "+string(rune('a'+i))); err != nil {
					t.Fatal(err)
				}
			}
			f.MustSync("app")
			got := jobExceptionEvents(f.Events())
			if len(got) != 10 || !strings.Contains(got[0], "failure l") || !strings.Contains(got[9], "failure c") {
				t.Errorf("%d events, want failures l … c (10): %q", len(got), got)
			}
		})
	}
}
