package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	flinkv1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// The FlinkStateSnapshot CRD is optional (docs/snapshots.md, "Legacy
// mode"): without it the operator runs every job in legacy mode
// (savepointInfo/checkpointInfo status fields), does not start the snapshot
// controller nor its informer, says so once at start (an error log line) and
// once per job (a SnapshotResourcesDisabled Warning event).
//
// When the CRD is installed later, a discovery poll notices it and the
// operator starts over in the same process (Run's loop; the internal run
// ends with ErrSnapshotCRDInstalled as its cause): informers, queues and
// controllers are rebuilt, now with the snapshot informer and controller, and
// jobs leave legacy mode. Rebuilding everything, rather than adding an
// informer and a controller to running caches, cannot leave a half-switched
// process (jobs synced in legacy mode next to a snapshot controller whose
// caches have not synced); the workqueues are rebuilt from the informers
// anyway. No process restart and no user action is needed.

// snapshotsPlural is the FlinkStateSnapshot resource name.
const snapshotsPlural = "flinkstatesnapshots"

// snapshotCRDPollInterval is how often discovery is asked whether the CRD
// has appeared.
const snapshotCRDPollInterval = 30 * time.Second

// snapshotCRDMissingLog is the one error line logged at start without the CRD.
const snapshotCRDMissingLog = "FlinkStateSnapshot CRD is not installed: snapshots are kept in the legacy status fields; " +
	"install it with kubectl apply --server-side -f manifests/crds/flink.apache.org_flinkstatesnapshots.yaml"

// ErrSnapshotCRDInstalled ends one internal run when the FlinkStateSnapshot
// CRD appears while the operator runs in legacy mode; Run then starts over
// with snapshot resources.
var ErrSnapshotCRDInstalled = errors.New("the FlinkStateSnapshot CRD was installed while the operator ran without it")

// groupResources is the one discovery call the operator makes. client-go's
// discovery client is not used: its package registers every Kubernetes API
// group at start (see package clients).
type groupResources interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// discoveryTimeout bounds one discovery request, as client-go's discovery
// client does when the configuration has no timeout.
const discoveryTimeout = 32 * time.Second

// restDiscovery asks the API server which resources a group version serves.
type restDiscovery struct{ client rest.Interface }

func (d restDiscovery) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	defer cancel()
	raw, err := d.client.Get().AbsPath("/apis", groupVersion).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decoding the resources of %s: %w", groupVersion, err)
	}
	return &list, nil
}

// servedResources lists the flink.apache.org/v1beta1 resources the API
// server serves; an empty set (no error) when the group is not served.
func servedResources(d groupResources) (map[string]bool, error) {
	resources, err := d.ServerResourcesForGroupVersion(flinkv1beta1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	served := map[string]bool{}
	for _, r := range resources.APIResources {
		served[r.Name] = true
	}
	return served, nil
}

// snapshotCRDInstalled asks discovery whether FlinkStateSnapshots are served.
func snapshotCRDInstalled(d groupResources) (bool, error) {
	served, err := servedResources(d)
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", flinkv1beta1.SchemeGroupVersion, err)
	}
	return served[snapshotsPlural], nil
}

// legacyConfig is the operator configuration without the CRD: snapshot
// resources off for every job, whatever a job's flinkConfiguration says
// (config.SnapshotResourcesEnabled needs both the operator's and the job's).
func legacyConfig(cfg config.Config) config.Config {
	out := cfg.Clone()
	out[config.KeySnapshotResourceEnabled] = "false"
	return out
}

// watchSnapshotCRD polls discovery every interval until the CRD is served,
// then calls installed once and returns; it returns when ctx ends. Discovery
// errors are logged and retried at the next poll.
func watchSnapshotCRD(ctx context.Context, d groupResources, interval time.Duration, installed func()) {
	watchCRD(ctx, d, snapshotsPlural, interval, installed)
}

// watchCRD polls discovery every interval until the resource plural is
// served, then calls installed once and returns; it returns when ctx ends.
func watchCRD(ctx context.Context, d groupResources, plural string, interval time.Duration, installed func()) {
	logger := klog.FromContext(ctx)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		served, err := servedResources(d)
		if err != nil {
			logger.V(2).Info("Checking for a CRD failed, will retry", "resource", plural, "err", err)
			continue
		}
		if served[plural] {
			installed()
			return
		}
	}
}

// The FlinkBlueGreenDeployment CRD is optional too (an install from before
// it existed): without it the blue/green controller and its informer do
// not run, and a discovery poll starts the run over once it appears, as
// for the FlinkStateSnapshot CRD.

// blueGreenPlural is the FlinkBlueGreenDeployment resource name.
const blueGreenPlural = "flinkbluegreendeployments"

// crdPollInterval is snapshotCRDPollInterval, shorter in tests.
func (r *runState) crdPollInterval() time.Duration {
	if r.crdPoll > 0 {
		return r.crdPoll
	}
	return snapshotCRDPollInterval
}

// ErrBlueGreenCRDInstalled ends one internal run when the
// FlinkBlueGreenDeployment CRD appears; Run then starts over with it.
var ErrBlueGreenCRDInstalled = errors.New("the FlinkBlueGreenDeployment CRD was installed while the operator ran without it")

// checkBlueGreenCRD asks discovery whether FlinkBlueGreenDeployments are
// served; if not, it says so once and polls until they are.
func (r *runState) checkBlueGreenCRD(ctx context.Context, cancel context.CancelCauseFunc, d groupResources) error {
	served, err := servedResources(d)
	if err != nil {
		return fmt.Errorf("discovering %s: %w", flinkv1beta1.SchemeGroupVersion, err)
	}
	if served[blueGreenPlural] {
		return nil
	}
	logger := klog.FromContext(ctx)
	logger.Info("FlinkBlueGreenDeployment CRD is not installed: blue/green deployments are not managed; install it with " +
		"kubectl apply --server-side -f manifests/crds/flink.apache.org_flinkbluegreendeployments.yaml")
	r.blueGreenCRDMissing = true
	go watchCRD(ctx, d, blueGreenPlural, r.crdPollInterval(), func() {
		logger.Info("FlinkBlueGreenDeployment CRD is now installed")
		cancel(ErrBlueGreenCRDInstalled)
	})
	return nil
}
