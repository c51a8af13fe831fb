package deployment

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Job exceptions (upstream's JobStatusObserver.observeJobManagerExceptions):
// each root failure in the job's exception history (GET
// /jobs/:id/exceptions) becomes one Warning JobException event on the
// FlinkDeployment, newest first, at most limit-per-reconciliation per sync,
// each with the first stacktrace-lines lines of its stack trace. Each is
// reported once: the newest timestamp reported is kept in memory per
// FlinkDeployment and job, and after an operator restart it is read back
// from the events already recorded (their exception-timestamp annotation).

// AnnotationExceptionTimestamp on a JobException event is the exception's
// time (upstream's EXCEPTION_TIMESTAMP), as an RFC 3339 instant.
const AnnotationExceptionTimestamp = "exception-timestamp"

// maxEventAge: events older than this may be gone from the API server
// (upstream's MAX_K8S_EVENT_AGE); exceptions older than that are not
// reported after a restart.
const maxEventAge = 30 * time.Minute

// exceptionMarks remembers, per FlinkDeployment (namespace/name/uid), the
// job and the newest exception time reported.
type exceptionMarks struct {
	m sync.Map // key → exceptionMark
}

type exceptionMark struct {
	jobID string
	last  time.Time
	// lastMod is the job's last-modification (jobs overview) when the
	// exceptions were read: a failure, even one the job recovers from
	// (region failover), moves it, so the history is read only then.
	lastMod int64
}

// observeExceptions reports the job's new exceptions. Failures to read
// them are logged only: they are reported on a later sync.
func (c *Controller) observeExceptions(ctx context.Context, sc *syncState) {
	if sc.Client == nil || sc.Job == nil {
		return
	}
	jobID, lastMod := sc.Job.ID, sc.Job.LastModification
	key := sc.Key() + "/" + string(sc.Obj().UID)
	var last time.Time
	known := false
	if v, ok := c.exceptions.m.Load(key); ok {
		known = true
		if mark := v.(exceptionMark); mark.jobID == jobID {
			if mark.lastMod == lastMod {
				return // nothing happened to the job since
			}
			last = mark.last
		} // another job: all of its exceptions are new
	}
	ex, err := sc.Client.JobExceptions(ctx, jobID, 0)
	if err != nil {
		sc.Log().V(2).Info("Cannot read the job's exceptions", "jobId", jobID, "err", err)
		return
	}
	entries := slices.Clone(ex.History.Entries)
	slices.SortStableFunc(entries, func(a, b flink.RootException) int { return cmp.Compare(b.Timestamp, a.Timestamp) })

	if !known {
		last, err = c.lastReportedException(ctx, sc, entries)
		if err != nil {
			sc.Log().V(2).Info("Cannot read the JobException events already recorded", "err", err)
			return
		}
	}
	if len(entries) == 0 {
		c.exceptions.m.Store(key, exceptionMark{jobID: jobID, last: last, lastMod: lastMod})
		return
	}
	limit := exceptionOption(sc, config.KeyEventsExceptionsLimit)
	lines := exceptionOption(sc, config.KeyEventsExceptionsStacktraceLines)
	count := 0
	for _, e := range entries {
		at := time.UnixMilli(e.Timestamp)
		if !at.After(last) {
			break
		}
		if count >= limit {
			sc.Log().Info("More new job exceptions than reported", "jobId", jobID, "limit", limit)
			break
		}
		count++
		c.Recorder.AnnotatedEventf(sc.Obj(), exceptionAnnotations(e, at), corev1.EventTypeWarning, reasons.ReasonJobException, "%s", exceptionMessage(e, lines))
	}
	c.exceptions.m.Store(key, exceptionMark{jobID: jobID, last: time.UnixMilli(entries[0].Timestamp), lastMod: lastMod})
}

// lastReportedException is where reporting starts after an operator start
// (upstream's rule): nothing to skip when the job has no exceptions yet; all
// skipped when the newest is older than events live; else after the newest
// exception-timestamp of the JobException events already recorded, or
// maxEventAge ago without one.
func (c *Controller) lastReportedException(ctx context.Context, sc *syncState, entries []flink.RootException) (time.Time, error) {
	if len(entries) == 0 {
		return time.Time{}, nil
	}
	expiry := sc.Now().Add(-maxEventAge)
	if newest := time.UnixMilli(entries[0].Timestamp); newest.Before(expiry) {
		return newest, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := c.Kube.CoreV1().Events(sc.Obj().Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.uid": string(sc.Obj().UID), "reason": reasons.ReasonJobException,
	}.String()})
	if err != nil {
		return time.Time{}, err
	}
	last := expiry
	found := false
	for _, ev := range list.Items {
		if ev.InvolvedObject.UID != sc.Obj().UID || ev.Reason != reasons.ReasonJobException {
			continue
		}
		at := ev.CreationTimestamp.Time
		if s, ok := ev.Annotations[AnnotationExceptionTimestamp]; ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				at = t
			}
		}
		if !found || at.After(last) {
			last, found = at, true
		}
	}
	return last, nil
}

// exceptionMessage is upstream's: the first lines of the stack trace, and
// how many more there were.
func exceptionMessage(e flink.RootException, maxLines int) string {
	trace := strings.TrimSpace(e.Stacktrace)
	if trace == "" {
		return e.ExceptionName
	}
	lines := strings.Split(trace, "\n")
	var b strings.Builder
	for i := 0; i < min(maxLines, len(lines)); i++ {
		b.WriteString(lines[i])
		b.WriteString("\n")
	}
	if len(lines) > maxLines {
		fmt.Fprintf(&b, "... (%d more lines)", len(lines)-maxLines)
	}
	return strings.TrimSpace(b.String())
}

func exceptionAnnotations(e flink.RootException, at time.Time) map[string]string {
	a := map[string]string{AnnotationExceptionTimestamp: at.UTC().Format(time.RFC3339Nano)}
	if e.TaskName != "" {
		a["task-name"] = e.TaskName
	}
	if e.Endpoint != "" {
		a["endpoint"] = e.Endpoint
	}
	if e.TaskManagerID != "" {
		a["tm-id"] = e.TaskManagerID
	}
	for k, v := range e.FailureLabels {
		// The API server refuses an event with an invalid annotation key.
		if key := "failure-label-" + k; len(validation.IsQualifiedName(key)) == 0 {
			a[key] = v
		}
	}
	return a
}

// exceptionOption reads one of the operator-wide events.exceptions.*
// options (upstream's names and defaults, registered in pkg/config, which
// validated them at start: at least 0). The registered default stands in
// for a value that does not parse, which the operator's start refuses.
func exceptionOption(sc *syncState, key string) int {
	n, err := sc.Cfg.Int(key)
	if err != nil || n < 0 {
		n, _ = config.Config{}.Int(key)
	}
	return n
}
