package fakejm

import "net/http"

// Route patterns served by the fake, in net/http ServeMux syntax. Tests use
// them to target faults and to filter the request log.
const (
	RouteConfig            = "GET /config"
	RouteOverview          = "GET /overview"
	RouteTaskManagers      = "GET /taskmanagers"
	RouteJobs              = "GET /jobs"
	RouteJobsOverview      = "GET /jobs/overview"
	RouteJob               = "GET /jobs/{jobid}"
	RouteJobCancel         = "PATCH /jobs/{jobid}"
	RouteJobStatus         = "GET /jobs/{jobid}/status"
	RouteExceptions        = "GET /jobs/{jobid}/exceptions"
	RouteSavepointTrigger  = "POST /jobs/{jobid}/savepoints"
	RouteSavepointStatus   = "GET /jobs/{jobid}/savepoints/{triggerid}"
	RouteStop              = "POST /jobs/{jobid}/stop"
	RouteCheckpointTrigger = "POST /jobs/{jobid}/checkpoints"
	RouteCheckpointStatus  = "GET /jobs/{jobid}/checkpoints/{triggerid}"
	RouteCheckpoints       = "GET /jobs/{jobid}/checkpoints"
	RouteCheckpointConfig  = "GET /jobs/{jobid}/checkpoints/config"
	RouteCheckpointDetails = "GET /jobs/{jobid}/checkpoints/details/{checkpointid}"
	RouteDisposalTrigger   = "POST /savepoint-disposal"
	RouteDisposalStatus    = "GET /savepoint-disposal/{triggerid}"
	RouteJars              = "GET /jars"
	RouteJarUpload         = "POST /jars/upload"
	RouteJarRun            = "POST /jars/{jarid}/run"
	RouteJarDelete         = "DELETE /jars/{jarid}"
)

func (s *Server) routes() {
	s.handle(RouteConfig, s.getConfig)
	s.handle(RouteOverview, s.getOverview)
	s.handle(RouteTaskManagers, s.getTaskManagers)
	s.handle(RouteJobs, s.getJobs)
	s.handle(RouteJobsOverview, s.getJobsOverview)
	s.handle(RouteJob, s.getJob)
	s.handle(RouteJobCancel, s.cancelJob)
	s.handle(RouteJobStatus, s.getJobStatus)
	s.handle(RouteExceptions, s.getExceptions)
	s.handle(RouteJobMetrics, s.getJobMetrics)                              // handlers_metrics.go
	s.handle(RouteResourceRequirements, s.getResourceRequirements)          // handlers_resources.go
	s.handle(RouteResourceRequirementsUpdate, s.updateResourceRequirements) // handlers_resources.go
	s.handle(RouteJobPlan, s.getJobPlan)                                    // handlers_vertices.go
	s.handle(RouteVertex, s.getVertex)                                      // handlers_vertices.go
	s.handle(RouteVertexSubtaskMetrics, s.getVertexSubtaskMetrics)          // handlers_vertices.go
	s.handle(RouteSavepointTrigger, s.triggerSavepoint)
	s.handle(RouteSavepointStatus, s.savepointStatus)
	s.handle(RouteStop, s.stopWithSavepoint)
	s.handle(RouteCheckpointTrigger, s.triggerCheckpoint)
	s.handle(RouteCheckpointStatus, s.checkpointStatus)
	s.handle(RouteCheckpoints, s.getCheckpoints)
	s.handle(RouteCheckpointConfig, s.getCheckpointConfig)
	s.handle(RouteCheckpointDetails, s.getCheckpointDetails)
	s.handle(RouteDisposalTrigger, s.triggerDisposal)
	s.handle(RouteDisposalStatus, s.disposalStatus)
	s.handle(RouteJars, s.webSubmit(s.listJars))
	s.handle(RouteJarUpload, s.webSubmit(s.uploadJar))
	s.handle(RouteJarRun, s.webSubmit(s.runJar))
	s.handle(RouteJarDelete, s.webSubmit(s.deleteJar))
	// Everything else is unknown to Flink's router.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.serve("", func(in *inbound) reply { return notFoundRoute(in.r.URL.Path) }, w, r)
	})
}

// webSubmit hides the /jars endpoints when flink-runtime-web is "absent".
func (s *Server) webSubmit(h handler) handler {
	return func(in *inbound) reply {
		if s.opts.DisableWebSubmit {
			return notFoundRoute(in.r.URL.Path)
		}
		return h(in)
	}
}
