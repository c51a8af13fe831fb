package operator

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// lockedBuffer is a log output written by the recorder's goroutines and
// read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// countingSink is the API server's side of the recorder: it counts the
// writes (creates, and patches of correlated repeats).
type countingSink struct {
	mu         sync.Mutex
	writes     int
	aggregated int // writes of an "(combined from similar events)" Event
}

func (s *countingSink) write(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if strings.Contains(e.Message, "combined from similar events") {
		s.aggregated++
	}
	return e, nil
}

func (s *countingSink) Create(e *corev1.Event) (*corev1.Event, error) { return s.write(e) }
func (s *countingSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.write(e) }
func (s *countingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.write(e)
}

func (s *countingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Every event the operator records is in its log once, at the default
// verbosity (0), with its reason, object and message verbatim, as upstream
// logs its events: its e2e greps the operator log for "Job status changed
// from .* to FINISHED". Repeats the recorder correlates (one Event, its
// count patched) and similar events it aggregates ("combined from similar
// events") are still one log line per recorded event, with the message as
// recorded.
func TestEventsLoggedAtDefaultVerbosity(t *testing.T) {
	out := &lockedBuffer{}
	// The operator logs through klog's text format at -v=0 by default.
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out), textlogger.Verbosity(0)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()

	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sink := &countingSink{}
	broadcaster, recorder := newEventRecorder(ctx, scheme, sink)
	defer broadcaster.Shutdown()

	dep := &v1beta1.FlinkDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "FlinkDeployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "batch-job", UID: "uid-1"},
	}
	// Three identical events (one Event, its count patched twice), then
	// twelve similar ones: past the tenth of a reason on an object, the
	// recorder aggregates them into one "(combined from similar events)".
	const finished = "Job status changed from RUNNING to FINISHED"
	for range 3 {
		recorder.Event(dep, corev1.EventTypeNormal, "JobStatusChanged", finished)
	}
	const similar = 12
	for i := range similar {
		recorder.Eventf(dep, corev1.EventTypeWarning, "JobStatusChanged", "Job status changed from RUNNING to FAILED (attempt %d)", i)
	}
	const recorded = 3 + similar

	eventLines := func() []string {
		var lines []string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "JobStatusChanged") {
				lines = append(lines, l)
			}
		}
		return lines
	}
	deadline := time.Now().Add(10 * time.Second)
	for (len(eventLines()) < recorded || sink.count() < recorded) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// Let anything more that would come arrive.
	time.Sleep(200 * time.Millisecond)
	lines := eventLines()
	if len(lines) != recorded {
		t.Fatalf("%d log lines with the reason for %d recorded events (%d sink writes); log:\n%s", len(lines), recorded, sink.count(), out.String())
	}
	upstreamGrep := regexp.MustCompile(`Job status changed from .* to FINISHED`)
	matches := 0
	for _, l := range lines {
		if upstreamGrep.MatchString(l) {
			matches++
		}
		// klog text: I<date> ... "Event occurred" object="ns1/batch-job" ... reason="JobStatusChanged" message="..."
		if !strings.HasPrefix(l, "I") {
			t.Errorf("not a klog info line: %s", l)
		}
		for _, want := range []string{`object="ns1/batch-job"`, `kind="FlinkDeployment"`, `reason="JobStatusChanged"`, `message="Job status changed from RUNNING to F`} {
			if !strings.Contains(l, want) {
				t.Errorf("log line lacks %s: %s", want, l)
			}
		}
		if strings.Contains(l, "combined from similar events") {
			t.Errorf("log line has the aggregated message, not the recorded one: %s", l)
		}
	}
	if matches != 3 {
		t.Errorf("%d log lines match %q, want 3 (one per recorded event)", matches, upstreamGrep)
	}
	for i := range similar {
		want := fmt.Sprintf(`message="Job status changed from RUNNING to FAILED (attempt %d)"`, i)
		if !strings.Contains(out.String(), want) {
			t.Errorf("log lacks %s", want)
		}
	}
	// The test is about correlated and aggregated events only if the
	// recorder did correlate and aggregate them.
	sink.mu.Lock()
	aggregated := sink.aggregated
	sink.mu.Unlock()
	if aggregated == 0 {
		t.Errorf("the sink got no aggregated event: the test no longer exercises aggregation")
	}
	t.Logf("%d events recorded, %d aggregated, %d log lines, %d sink writes; first line: %s", recorded, aggregated, len(lines), sink.count(), lines[0])
}
