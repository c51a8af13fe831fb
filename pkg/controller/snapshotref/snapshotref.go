// Package snapshotref resolves a job's spec.job.initialStateSnapshotRef to
// the path it starts from, for both job controllers (FlinkDeployment and
// FlinkSessionJob), from the informer cache.
package snapshotref

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Path resolves ref of obj (a kind, "FlinkDeployment" or "FlinkSessionJob")
// from the cache (pkg/snapshotrules.RestorePath says what will do). A reference
// to another namespace also needs obj to carry the admission webhook's
// stamp for exactly this reference (pkg/reviewstamp): the option alone
// would let whoever may create the resource start it from any namespace's
// snapshot whenever the webhook was absent, skipped or not yet registered.
// Checked before the snapshot is even looked up.
func Path(caches *flinkcache.Caches, cfg config.Config, keys reviewstamp.Keys, kind string, obj metav1.Object, ref *v1beta1.SnapshotReference) (string, error) {
	ns := obj.GetNamespace()
	refNS := snapshotrules.RefNamespace(ref, ns)
	cross, _ := cfg.Bool(config.KeySnapshotCrossNamespaceReferencesEnabled)
	if refNS != ns && cross {
		target := reviewstamp.Reference{Kind: "FlinkStateSnapshot", Namespace: refNS, Name: ref.Name}
		if _, err := reviewstamp.Verify(keys, kind, obj, target); err != nil {
			return "", fmt.Errorf("spec.job.initialStateSnapshotRef: FlinkStateSnapshot %s/%s is in another namespace and this reference was not reviewed by the operator's admission webhook (which checks that its author may get that snapshot, then stamps the %s): %v; the next change of its spec, by a user allowed to get that snapshot, gets it reviewed",
				refNS, ref.Name, kind, err)
		}
	}
	snap, err := caches.Snapshot(refNS, ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	return snapshotrules.RestorePath(ref, ns, snap, cross)
}
