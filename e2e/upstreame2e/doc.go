// Package upstreame2e runs upstream's own e2e scripts against this operator:
// every test_*.sh of apache/flink-kubernetes-operator release 1.15.0's
// e2e-tests, with its utils.sh and data, unedited. This repository does not
// keep them (they are upstream's code): FLINKOP_UPSTREAM_E2E_TESTS (make's
// UPSTREAM_E2E_TESTS) names the e2e-tests directory of a checkout of that
// release, and every file is checked against the git blob
// testdata/SOURCES.md records before anything runs (a test_*.sh the
// harness does not know stops the run too). `make e2e-upstream` runs
// TestUpstreamScripts: one subtest <line>/<mode>/<script> per run, each on a
// fresh cluster; FLINKOP_UPSTREAM_E2E_SCRIPTS, FLINKOP_UPSTREAM_E2E_LINES
// (v2_3, v1_20) and FLINKOP_UPSTREAM_E2E_MODES (native, standalone) select
// (make's UPSTREAM_E2E_SCRIPTS, _LINES, _MODES; comma-separated).
//
// # The matrix (matrix_test.go)
//
// Upstream's CI (.github/workflows/ci.yml of the release) runs each script
// on the lines v2_2, v2_1, v2_0 and v1_20, native and standalone, except:
// test_autoscaler.sh native only; test_multi_sessionjob.sh only in its
// namespace tests (operator in namespace flink, watching default and
// flink); test_logback_logging.sh in its logging job; the three blue/green
// scripts in no job at all. The harness runs the lines v2_3 (flink:2.3; the
// node agent runs the pinned 2.3.0 for every 2.x image) and v1_20
// (flink:1.20, pinned 1.20.5), both modes, CI's exclusions kept, and the
// blue/green scripts in native mode. Scripts CI runs both in e2e_ci and in
// its namespace tests (test_application_operations.sh, test_autoscaler.sh,
// the dynamic ones) run once, as e2e_ci runs them (namespace default).
//
// A script whose feature does not exist here is pending, with the reason
// and what enables it (upstreamScript.pending): it still runs, it is
// reported "pending" when it fails, and the run fails when it passes (take
// it off the list then). At the end the test logs a table script / line /
// mode / pass|pending|fail / times, also written to
// .cache/upstream-e2e/<time>/summary; each run's script output, every
// pod's container logs (kept across pod deletions) and a trail of the
// resources' status are in .cache/upstream-e2e/<time>/<line>-<mode>/<script>/.
//
// Pending today (matrix_test.go has the full reasons):
//
//   - test_logback_logging.sh: it checks upstream's Java operator's logback
//     setup (SLF4J, log pattern, LOGGING_FRAMEWORK, LOG_CONFIG,
//     logback-operator.xml mounted); this operator is a Go binary logging
//     with klog, and nothing is planned to change that.
//   - test_bluegreen_laststate.sh on v2_3 only: Flink 2.3 declines a
//     canonical savepoint of the StateMachineExample's async state
//     (UnsupportedOperationException "Not supported yet"), so the
//     transition savepoint never completes and green is never created.
//
// # One run
//
// As upstream's CI (.github/workflows/e2e.yaml): a fresh cluster, the
// operator installed with Helm and Available, CI's data substitutions,
// `bash e2e-tests/<script>`:
//
//  1. localcluster.Start with the node agent: real kube-apiserver, etcd and
//     kube-controller-manager (with the PV controllers, a default
//     StorageClass and provisioner that bind the data's claims), the
//     ingress of class nginx on 127.0.0.1:80, and the node agent, which runs
//     pods as local processes: Flink JVMs for flink images, Debian's
//     busybox-static for busybox (upstream's artifacts-fetcher init
//     container), this checkout's operator binary for the chart's image
//     ghcr.io/flinkops/flink-operator; kubectl exec, port-forward, attach
//     and cp work.
//  2. CI's "Start the operator": `helm install flink-kubernetes-operator -n
//     <ns> helm/flink-operator -f values.yaml` (this project's chart, with
//     its CRDs and webhook; helm built by hack/build-helm.sh), then `kubectl
//     wait --for=condition=Available deploy/flink-kubernetes-operator` and
//     the operator's "Informer caches synced" line. Values (helmValues): CI's
//     per-script edits where they map (replicas: 2 for
//     test_flink_operator_ha.sh, leader election being always on here;
//     flink-conf.yaml renamed config.yaml for test_dynamic_config.sh;
//     logging.framework logback for test_logback_logging.sh; watchNamespaces
//     {default,flink} in namespace flink for the namespace test), and the
//     harness's below.
//  3. A copy of e2e-tests whose data/*.yaml get CI's `sed` substitutions
//     (ciPrepare), nothing else.
//  4. `bash <copy>/<script>` with PATH giving kubectl (the cluster's, a copy
//     of the admin kubeconfig), mikefarah's yq v4 (hack/build-yq.sh), helm
//     and a minikube shim; at most 15 min.
//
// # What differs from upstream's CI, and why
//
//   - nameOverride: flink-kubernetes-operator in the values: upstream's
//     chart is named flink-kubernetes-operator, so its Deployment and the
//     label app.kubernetes.io/name the scripts select the operator by are;
//     this chart's are flink-operator unless overridden.
//   - The image is this project's (CI builds upstream's from its
//     Dockerfile and sets image.repository/tag): the chart's default image,
//     run by the node agent as the locally built binary.
//   - No cert-manager (CI applies e2e-tests/cert-manager.yaml before the
//     install): this chart's operator creates and renews its webhook
//     certificate itself; the API server reaches the webhook through the
//     Service (localcluster's egress proxy).
//   - The jar URL: STREAMING_EXAMPLES_JAR_URL is flink-examples-streaming of
//     the line's pinned release (2.3.0; 1.20.0 for 1.20.5, see e2e/flink's
//     README) from ~/.m2, served over http on 127.0.0.1 (CI: 2.0.0, or 1.14.4
//     / 1.20.1 for v1_20, from Maven Central over https). Hence the values'
//     defaultConfiguration appends, besides CI's chart configuration
//     (reconcile interval 15 s, progress check 5 s),
//     kubernetes.operator.user.artifacts.allowed-schemes: http,https and
//     .disallow-restricted-hosts: false, so the operator fetches session
//     jobs' jars from there.
//   - `minikube ip` is a shim printing 127.0.0.1, where the local cluster's
//     ingress listens on port 80 (assert_available_slots curls
//     http://$(minikube ip)/default/<name>/overview).
//   - The node agent runs with --container-paths: Flink's configuration and
//     arguments keep the pod's paths (test_snapshot.sh greps the
//     JobManager's log for execution.savepoint.path,
//     file:/opt/flink/volume/...), as on a kubelet.
//   - The scripts get a copy of the admin kubeconfig (their cleanup sets the
//     current context's namespace).
//
// # Status (2 cores, December 2026; README "Upstream's e2e scripts" has the times)
//
// Every script of the matrix passes on both lines and in both modes but the
// pending ones: test_logback_logging.sh everywhere, and
// test_bluegreen_laststate.sh on v2_3 (it passes on v1_20).
package upstreame2e
