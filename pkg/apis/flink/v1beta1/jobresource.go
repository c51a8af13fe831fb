package v1beta1

// What the job engine (pkg/controller/jobengine) reads of a resource that
// runs a Flink job, FlinkDeployment or FlinkSessionJob, and of its spec:
// both kinds say it through the same methods, so the engine needs no type
// switch to tell them apart.

// JobResourceStatus points into the parts of a job resource's status that
// both kinds have under the same names.
//
// +k8s:deepcopy-gen=false
type JobResourceStatus struct {
	Job                *JobStatus
	Reconciliation     *ReconciliationStatus
	Error              *string
	ObservedGeneration *int64
	Lifecycle          *ResourceLifecycleState
}

// JobResourceStatus points into d's status.
func (d *FlinkDeployment) JobResourceStatus() JobResourceStatus {
	st := &d.Status
	return JobResourceStatus{&st.JobStatus, &st.ReconciliationStatus, &st.Error, &st.ObservedGeneration, &st.LifecycleState}
}

// JobResourceStatus points into j's status.
func (j *FlinkSessionJob) JobResourceStatus() JobResourceStatus {
	st := &j.Status
	return JobResourceStatus{&st.JobStatus, &st.ReconciliationStatus, &st.Error, &st.ObservedGeneration, &st.LifecycleState}
}

// SetStatusFrom makes d's status o's.
func (d *FlinkDeployment) SetStatusFrom(o *FlinkDeployment) { d.Status = o.Status }

// SetStatusFrom makes j's status o's.
func (j *FlinkSessionJob) SetStatusFrom(o *FlinkSessionJob) { j.Status = o.Status }

// CurrentSpec is d's spec (a shallow copy: its pointers are shared).
func (d *FlinkDeployment) CurrentSpec() FlinkDeploymentSpec { return d.Spec }

// CurrentSpec is j's spec (a shallow copy: its pointers are shared).
func (j *FlinkSessionJob) CurrentSpec() FlinkSessionJobSpec { return j.Spec }

// SetCurrentSpec replaces d's spec in memory (the job engine's overlay of
// the autoscaler's parallelism; only statuses are ever written back).
func (d *FlinkDeployment) SetCurrentSpec(s FlinkDeploymentSpec) { d.Spec = s }

// SetCurrentSpec replaces j's spec in memory (see FlinkDeployment's).
func (j *FlinkSessionJob) SetCurrentSpec(s FlinkSessionJobSpec) { j.Spec = s }

// JobReferenceKind is the kind a snapshot's jobReference names d by.
func (d *FlinkDeployment) JobReferenceKind() JobReferenceKind { return JobReferenceKindDeployment }

// JobReferenceKind is the kind a snapshot's jobReference names j by.
func (j *FlinkSessionJob) JobReferenceKind() JobReferenceKind { return JobReferenceKindSessionJob }

// GetJob is the job part of the spec (nil for a session cluster).
func (s FlinkDeploymentSpec) GetJob() *JobSpec { return s.Job }

// GetJob is the job part of the spec.
func (s FlinkSessionJobSpec) GetJob() *JobSpec { return s.Job }

// WithJob is s with job as its job part.
func (s FlinkDeploymentSpec) WithJob(job *JobSpec) FlinkDeploymentSpec { s.Job = job; return s }

// WithJob is s with job as its job part.
func (s FlinkSessionJobSpec) WithJob(job *JobSpec) FlinkSessionJobSpec { s.Job = job; return s }

// GetFlinkConfiguration is the spec's flinkConfiguration.
func (s FlinkDeploymentSpec) GetFlinkConfiguration() *Configuration { return s.FlinkConfiguration }

// GetFlinkConfiguration is the spec's flinkConfiguration.
func (s FlinkSessionJobSpec) GetFlinkConfiguration() *Configuration { return s.FlinkConfiguration }

// WithFlinkConfiguration is s with c as its flinkConfiguration.
func (s FlinkDeploymentSpec) WithFlinkConfiguration(c *Configuration) FlinkDeploymentSpec {
	s.FlinkConfiguration = c
	return s
}

// WithFlinkConfiguration is s with c as its flinkConfiguration.
func (s FlinkSessionJobSpec) WithFlinkConfiguration(c *Configuration) FlinkSessionJobSpec {
	s.FlinkConfiguration = c
	return s
}

// GetFlinkVersion is the Flink version the spec deploys.
func (s FlinkDeploymentSpec) GetFlinkVersion() FlinkVersion { return s.FlinkVersion }

// GetFlinkVersion is "": a session job runs on its cluster's Flink version,
// which its spec does not name.
func (s FlinkSessionJobSpec) GetFlinkVersion() FlinkVersion { return "" }

// Copy is a deep copy of s.
func (s FlinkDeploymentSpec) Copy() FlinkDeploymentSpec { return *s.DeepCopy() }

// Copy is a deep copy of s.
func (s FlinkSessionJobSpec) Copy() FlinkSessionJobSpec { return *s.DeepCopy() }
