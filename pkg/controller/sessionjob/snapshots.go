package sessionjob

// Snapshots the operator makes for a session job follow the same rules as
// for applications (docs/snapshots.md; pkg/snapshotrules applied by
// pkg/controller/jobengine). Savepoints go to the job's own savepoint
// directory when its flinkConfiguration sets one, else to the session
// cluster's (the snapshot controller resolves it the same way).
