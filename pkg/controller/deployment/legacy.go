package deployment

import (
	"github.com/flinkops/flink-operator/pkg/controller/legacysnapshots"
)

// Legacy mode (docs/snapshots.md, "Legacy mode"): savepoints and checkpoints of a job
// without snapshot resources live in status.jobStatus.savepointInfo/
// checkpointInfo; pkg/controller/legacysnapshots runs them, the same way for
// session jobs.

// Event reasons of legacy mode and of the missing CRD.
const (
	ReasonSnapshotResourcesDisabled = legacysnapshots.ReasonSnapshotResourcesDisabled
	ReasonCleanupFailed             = legacysnapshots.ReasonCleanupFailed
)
