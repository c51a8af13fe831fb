package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Requeue pacing for conditions the controller cannot speed up itself; the
// informer handlers wake snapshots earlier when the job or a sibling changes.
const (
	waitForValidation = time.Minute      // e.g. the target does not exist yet
	waitForSlot       = 30 * time.Second // another snapshot of the job is in flight
)

// Sync reconciles one snapshot: read from the cache, decide, make at most one
// REST call that changes Flink, write status (and labels) at most once each,
// and say when to look again.
func (c *Controller) Sync(ctx context.Context, key string) (time.Duration, error) {
	if jobKey, ok := strings.CutPrefix(key, disposalsKeyPrefix); ok {
		return c.syncPendingDisposals(ctx, jobKey) // handover.go
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.Caches.Snapshot(ns, name)
	if apierrors.IsNotFound(err) {
		c.release(key)
		c.writtenOver.Delete(key)
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if c.cacheBehind(key, cached.ResourceVersion) {
		klog.FromContext(ctx).V(4).Info("Cache behind this process's last write, waiting for it")
		return cacheLagRecheck, nil
	}
	if cached.DeletionTimestamp != nil {
		return c.syncDeletion(ctx, cached)
	}

	s := cached.DeepCopy()
	if s.Status.State == "" {
		s.Status.State = v1beta1.SnapshotTriggerPending
	}
	// Terminal snapshots cost nothing: no REST call, and a write only if
	// someone changed the operator's labels.
	if s.Status.State.IsTerminal() {
		t, _ := c.resolveTarget(s)
		_, err := c.commit(ctx, cached, s, t != nil && t.found)
		return 0, err
	}

	t, err := c.resolveTarget(s)
	if err == nil {
		err = c.validate(ctx, s, t)
	}
	if err != nil {
		// The spec or its job is unusable: say so, change nothing else. An
		// attempt already in flight that stays unobservable still ends at
		// the snapshot timeout, so nothing is stuck forever.
		if s.Status.State == v1beta1.SnapshotInProgress && c.pastTimeout(s) {
			requeue := c.fail(s, c.Clock.Now(), "cannot observe the snapshot: "+err.Error())
			_, werr := c.commit(ctx, cached, s, false)
			return requeue, werr
		}
		if s.Status.Error != err.Error() {
			c.Recorder.Event(s, corev1.EventTypeWarning, reasons.ReasonValidationError, err.Error())
			s.Status.Error = err.Error()
		}
		_, err := c.commit(ctx, cached, s, false)
		return waitForValidation, err
	}

	base := cached // what the API server has; trigger moves it forward
	r := requestOf(s, t.cfg)
	var requeue time.Duration
	switch s.Status.State {
	case v1beta1.SnapshotTriggerPending:
		base, requeue, err = c.trigger(ctx, base, s, t, r)
	case v1beta1.SnapshotInProgress:
		requeue, err = c.observe(ctx, s, t, r, false)
	}
	if err != nil {
		return 0, err
	}
	_, err = c.commit(ctx, base, s, t.found)
	return requeue, err
}

// validate re-checks the rules the webhook and CRD enforce (docs/webhook.md,
// "What is validated"), for objects created without them.
func (c *Controller) validate(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target) error {
	if (s.Spec.Savepoint == nil) == (s.Spec.Checkpoint == nil) {
		return errors.New("exactly one of checkpoint or savepoint configurations has to be set")
	}
	// Before the alreadyExists shortcut: such a savepoint may name another
	// namespace's job too, and disposing it on delete goes through that job's
	// cluster.
	if snapshotrules.IsCrossNamespace(s) {
		allowed, err := c.Config.Bool(config.KeySnapshotCrossNamespaceReferencesEnabled)
		if err != nil || !allowed {
			return fmt.Errorf("job reference to namespace %q is not allowed: cross-namespace references need %s: true in the operator configuration",
				s.Spec.JobReference.Namespace, config.KeySnapshotCrossNamespaceReferencesEnabled)
		}
		// Only the webhook checked that the creator may act on the other
		// namespace's job; a reference this very snapshot cannot prove was
		// reviewed (its stamp) is never acted on.
		guard := errors.New("the operator has no admission guard")
		if c.guard != nil {
			guard = c.guard(ctx, s)
		}
		if guard != nil {
			return fmt.Errorf("job reference to namespace %q is not trusted: cross-namespace references are acted on only when the operator's admission webhook reviewed them (it checks the creator may update the referenced job, then stamps the snapshot): %v",
				s.Spec.JobReference.Namespace, guard)
		}
	}
	if snapshotrules.AlreadyExists(s) {
		return nil
	}
	if s.Spec.JobReference == nil || s.Spec.JobReference.Name == "" {
		return errors.New("job reference must be supplied for this snapshot")
	}
	if !t.found && s.Status.State == v1beta1.SnapshotTriggerPending {
		return fmt.Errorf("target for snapshot %s/%s was not found", t.ref.Namespace, t.ref.Name)
	}
	return nil
}

// pastTimeout reports whether an IN_PROGRESS attempt is older than the
// operator-wide snapshot timeout (used when the job's own config is
// unreadable).
func (c *Controller) pastTimeout(s *v1beta1.FlinkStateSnapshot) bool {
	triggered, ok := snapshotrules.ParseTime(s.Status.TriggerTimestamp)
	timeout, err := config.SnapshotTimeout(c.CurrentConfig())
	return ok && err == nil && c.Clock.Since(triggered) > timeout
}
