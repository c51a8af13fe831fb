package flink

// Feature gates: which request fields and endpoints a Flink version accepts.
// They live in one place because Flink up to 1.19 answers an unknown request
// field with HTTP 400, so sending a field one release too early breaks the
// call outright. Sources: the generated OpenAPI specs of each release and
// the Flink changes named below.

// StrictRequestParsing reports whether the JobManager rejects unknown JSON
// request fields (everything before FLINK-35302 in 1.20).
func (v Version) StrictRequestParsing() bool { return v.Before(V1_20) }

// SupportsCheckpointTrigger reports whether POST /jobs/:id/checkpoints
// exists (FLINK-27101, 1.17).
func (v Version) SupportsCheckpointTrigger() bool { return v.AtLeast(V1_17) }

// RejectsIncrementalCheckpointTrigger reports whether an explicit
// INCREMENTAL checkpoint trigger fails (FLINK-33723, 1.19).
func (v Version) RejectsIncrementalCheckpointTrigger() bool { return v.AtLeast(V1_19) }

// SupportsJarRunFlinkConfiguration reports whether JarRunRequestBody has
// flinkConfiguration (1.17).
func (v Version) SupportsJarRunFlinkConfiguration() bool { return v.AtLeast(V1_17) }

// UsesClaimMode reports whether JarRunRequestBody names the restore mode
// claimMode (1.20+, restoreMode deprecated) rather than restoreMode.
func (v Version) UsesClaimMode() bool { return v.AtLeast(V1_20) }

// SupportsJobStatusEndpoint reports whether GET /jobs/:id/status exists
// (FLINK-26641, 1.16).
func (v Version) SupportsJobStatusEndpoint() bool { return v.AtLeast(V1_16) }

// HasLegacyExceptionFields reports whether /jobs/:id/exceptions still
// carries the deprecated top-level root-exception/timestamp/all-exceptions
// fields (removed in 2.0).
func (v Version) HasLegacyExceptionFields() bool { return v.Before(V2_0) }
