// Package nodeagent is a node agent for the local control plane of
// e2e/localcluster: it registers a Node (kept fresh with a Lease and Ready
// heartbeats), binds pending pods to it (the cluster has no scheduler) and
// runs the pods bound to it as local processes, as a kubelet would run
// containers:
//
//   - pods of the official Flink image (/docker-entrypoint.sh
//     standalone-job|jobmanager|taskmanager, as pkg/cluster builds them) as
//     real Flink JVMs through e2e/flink, one pinned version per major line;
//     in native mode too: the JobManager (bash -c "kubernetes-jobmanager.sh
//     kubernetes-application|kubernetes-session") and the TaskManager pods
//     Flink's resource manager creates through the API server (bash -c
//     "kubernetes-taskmanager.sh ..."), which the agent binds and runs like
//     any other pod;
//   - pods of a fake-jobmanager image as cmd/fake-jobmanager processes
//     (hundreds fit on one machine);
//   - pods of the operator's own image (ghcr.io/flinkops/flink-operator) as
//     Config.OperatorBinary, the locally built operator, with the pod's
//     args (listen flags moved from all addresses to the pod IP), hostname
//     (a UTS namespace of its own) and hosts file as /etc/hosts;
//   - pods of the busybox image (busybox:1.35.0, docker.io/library/busybox)
//     as Config.Busybox, Debian's busybox-static (e2e/localcluster fetches
//     it), in a root of their own like the image's (busybox's applets in
//     /bin, not the machine's files; see busybox.go) — upstream's e2e data
//     fetches job jars with busybox wget in an init container;
//   - with Config.HostCommands, pods of HostCommandImage as their command
//     (tests);
//   - anything else not at all: the container waits with reason
//     ImageNotSupportedByLocalAgent.
//
// Each pod gets a loopback IP of its own, its volumes as directories (those
// of ConfigMaps, Secrets, the downward API and projections kept in step with
// their objects, as the kubelet's atomic writer does; see volumesync.go), its
// environment as the kubelet computes it (with KUBERNETES_SERVICE_HOST/PORT
// leading to the API server), service-account tokens from the TokenRequest
// API (refreshed), and (for JVMs and the operator) a hosts file that stands
// in for cluster DNS, kept in step with Services and pods. Each container
// runs in a private mount namespace with its volumes at their mount paths
// (mount points are never created on the machine) and in a PID namespace of
// its own, its command PID 1 there, with the namespace's /proc (see
// mountns.go). Init containers run in order, each to completion, before the
// containers, restarted on failure unless restartPolicy is Never, which
// fails the pod (initcontainers.go). Pod
// status (phase, podIP, container states, Ready) is written through the
// status subresource; readiness of JobManagers is their REST API answering;
// the operator's image and host commands get the kubelet's startup,
// liveness and readiness probes (probe.go), a failing liveness probe
// restarting the container. Deleted pods' processes get SIGTERM, then
// SIGKILL after the (capped) grace period, and the pod object is then
// removed, as the kubelet does.
//
// Every process runs in its own process group with a parent-death signal and
// is recorded (localcluster.Recorder), so no JVM outlives a killed test run.
//
// Each run of a container writes its output to a file of its own, and, given
// a serving certificate and the cluster CA (Config.TLSCertFile, TLSKeyFile,
// ClientCAFile), the agent serves the kubelet API's GET /containerLogs, which
// the API server proxies `kubectl logs` (-f, --previous, --tail,
// --limit-bytes) to, /exec (`kubectl exec`: the command runs with nsenter in
// the container's mount and PID namespaces, root, working directory and
// environment, with a pty for -t, and its exit code is reported as by a
// kubelet; exec.go) and /portForward (`kubectl port-forward` to the pod's
// IP; portforward.go), with the kubelet's own streaming server
// (k8s.io/cri-streaming), and /attach (the container's output).
//
// See README.md for the details and limits, and localcluster.Options.NodeAgent
// for the usual way to start it.
package nodeagent
