package deployment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With Kubernetes HA, Flink keeps the job graph of an application cluster in
// its HA ConfigMaps, beside the checkpoint pointers. A new JobManager that
// finds one recovers that graph, not the one of the spec it was deployed
// with, so a last-state upgrade would silently keep the old parallelism
// (and every other job-graph change). Before a new JobManager of an
// application cluster is created, the job graphs are removed and the
// checkpoint pointers kept, as upstream's
// FlinkUtils.deleteJobGraphInKubernetesHA does. Removing keys is
// idempotent, and the JobManager is created only after it succeeded (post
// actions stop at the first error), so a crash in between repeats it.

// jobGraphKeyPrefixes begin the job-graph keys: Flink 1.x's job graph
// store (Constants.JOB_GRAPH_STORE_KEY_PREFIX) and Flink 2's execution
// plan store.
var jobGraphKeyPrefixes = []string{"jobGraph-", "executionPlan-"}

func jobGraphKeys(data map[string]string) []string {
	var keys []string
	for k := range data {
		if slices.ContainsFunc(jobGraphKeyPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// dropHAJobGraphs queues the removal of the job graphs from the cluster's HA
// ConfigMaps (read from the cache, which keeps their data), to run before
// the JobManager is created.
func (c *Controller) dropHAJobGraphs(sc *syncState) {
	if sc.Recorded() == nil || sc.Recorded().Spec.Job == nil || !kubernetesHA(sc.Cfg) {
		return
	}
	cms, err := c.owned.haConfigMaps(sc.Obj())
	if err != nil {
		sc.Log().Error(err, "Cannot list the HA ConfigMaps")
		return
	}
	ns := sc.Obj().Namespace
	for _, cm := range cms {
		keys := jobGraphKeys(cm.Data)
		if len(keys) == 0 || cm.DeletionTimestamp != nil {
			continue
		}
		sc.AfterStatusWrite("remove the job graph from HA ConfigMap "+cm.Name, func(ctx context.Context) error {
			u := cm.DeepCopy()
			for _, k := range keys {
				delete(u.Data, k)
			}
			_, err := c.Kube.CoreV1().ConfigMaps(ns).Update(ctx, u, metav1.UpdateOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing the job graph from HA ConfigMap %s/%s: %w", ns, cm.Name, err)
			}
			sc.Log().Info("Removed the job graph from an HA ConfigMap, keeping its checkpoints", "configMap", cm.Name, "keys", keys)
			return nil
		})
	}
}
