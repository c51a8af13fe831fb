package deployment

import "github.com/flinkops/flink-operator/pkg/controller/jobengine"

// Event reasons of legacy mode and of the missing CRD, under the names this
// package's tests use (legacy mode itself is pkg/controller/jobengine's).
const (
	ReasonSnapshotResourcesDisabled = jobengine.ReasonSnapshotResourcesDisabled
	ReasonCleanupFailed             = jobengine.ReasonCleanupFailed
)
