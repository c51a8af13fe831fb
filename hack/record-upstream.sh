#!/usr/bin/env bash
# record-upstream.sh: records the objects the Apache Flink Kubernetes Operator (release 1.15.0, built from source)
# leaves on a cluster, for the takeover tests (issue 38). A maintainer tool: CI never runs it (CI cannot build
# upstream); its output is committed under pkg/controller/deployment/testdata/upstream-1.15.0 (see SOURCES.md there).
#
#   sudo hack/record-upstream.sh            # 6 min measured (fresh export and build, warm ~/.m2, cached kube binaries)
#
# What it does, in order (each step is what SOURCES.md describes; the 2026-12-06 recording was made by hand with
# exactly these commands):
#   1. exports tag release-1.15.0 of apache/flink-kubernetes-operator (UPSTREAM_GIT_DIR, a git dir holding the tag;
#      default: a fresh clone) and builds flink-kubernetes-operator and what it needs with Maven. The build's
#      maven-antrun-plugin executions only check CRD compatibility against older releases' CRDs fetched from
#      raw.githubusercontent.com (and drop a scale subresource from the blue/green CRD); they are skipped
#      (-Dmaven.antrun.skip=true): the CRDs installed are the ones checked in at the tag, not the build's.
#   2. starts this repository's local cluster without this operator (e2e/cmd/local-cluster run --no-operator) with the
#      tag's CRDs (helm/flink-kubernetes-operator/crds); it also applies manifests/flink-serviceaccount in default.
#   3. keeps /etc/hosts mapping <name>-rest.<ns>, .svc and .svc.cluster.local to the JobManager pod's IP (the node
#      agent's pod IPs are loopback addresses of this machine; upstream's operator reaches a JobManager by its rest
#      Service's DNS name only), between "# BEGIN upstream-rec" / "# END upstream-rec" lines it removes at exit.
#      Needs root.
#   4. runs upstream's operator as a host process, as the image's docker-entrypoint.sh "operator" does (standalone jar,
#      shaded operator jar, log4j jars on the class path; main class org.apache.flink.kubernetes.operator.FlinkOperator),
#      FLINK_CONF_DIR holding the Helm chart's conf/ with the chart's values.yaml overrides and
#      testdata/upstream-1.15.0/operator-conf/overrides.yaml appended. KUBERNETES_SERVICE_HOST is set (to any value):
#      without it upstream's FlinkOperatorConfiguration sends every REST call to "localhost".
#   5. drives the scenarios (manifests in testdata/upstream-1.15.0/manifests) and dumps each state with kubectl -o yaml,
#      deleting only metadata.managedFields: the FlinkDeployment (and FlinkSessionJob), the FlinkStateSnapshots whose
#      jobReference names them, and every Deployment, Service, ConfigMap and Pod labelled app=<name>.
#   6. stops the operator, the hosts loop and the cluster (trap on exit).
#
# Environment: OUT (default pkg/controller/deployment/testdata/upstream-1.15.0; scenario directories are replaced),
# WORK (default /tmp/upstream-rec), UPSTREAM_GIT_DIR, FLINKOP_KUBE_BIN_DIR (passed to the local cluster), FLINK_DATA
# (checkpoints, savepoints, HA; default /tmp/flink-data-upstream, the path the manifests name).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tag=release-1.15.0
version=1.15.0
rec=$root/pkg/controller/deployment/testdata/upstream-$version
OUT=${OUT:-$rec}
WORK=${WORK:-/tmp/upstream-rec}
FLINK_DATA=${FLINK_DATA:-/tmp/flink-data-upstream}
[ "$FLINK_DATA" = /tmp/flink-data-upstream ] || { echo "the manifests name /tmp/flink-data-upstream" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root: it edits /etc/hosts (step 3)" >&2; exit 2; }

log() { printf '%s record-upstream: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
mkdir -p "$WORK"/{conf,artifacts,crds} "$FLINK_DATA"

# --- 1. upstream's source and build ---------------------------------------------------------------------------
src=$WORK/upstream-op
if [ ! -f "$src/flink-kubernetes-operator/target/flink-kubernetes-operator-$version-shaded.jar" ]; then
  gitdir=${UPSTREAM_GIT_DIR:-}
  if [ -z "$gitdir" ]; then
    gitdir=$WORK/upstream.git
    [ -d "$gitdir" ] || git clone --bare --filter=blob:none https://github.com/apache/flink-kubernetes-operator "$gitdir"
  fi
  log "upstream $tag = $(git -C "$gitdir" rev-parse "$tag^{commit}")"
  rm -rf "$src" && mkdir -p "$src"
  git -C "$gitdir" archive "$tag" | tar -x -C "$src"
  log "building upstream's operator (mvn package, no tests)"
  (cd "$src" && mvn -q -B -DskipTests -Dcheckstyle.skip -Dspotless.check.skip -Drat.skip -Dmaven.antrun.skip=true \
    -pl flink-kubernetes-operator -am package)
fi
target=$src/flink-kubernetes-operator/target
cp "$src"/helm/flink-kubernetes-operator/crds/*.yml "$WORK/crds/"

# Operator configuration: the chart's conf/ plus its values.yaml overrides and this recording's (overrides.yaml).
cp "$src"/helm/flink-kubernetes-operator/conf/* "$WORK/conf/"
{ echo; cat "$rec/operator-conf/overrides.yaml"; } >> "$WORK/conf/flink-conf.yaml"

# --- cleanup of everything started here -----------------------------------------------------------------------
pids=()
cleanup() {
  set +e
  for ((i=${#pids[@]}-1; i>=0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done
  local rest
  rest=$(awk '/^# BEGIN upstream-rec/{skip=1} !skip{print} /^# END upstream-rec/{skip=0}' /etc/hosts)
  printf '%s\n' "$rest" > /etc/hosts   # in place: /etc/hosts may be a bind mount
  log "stopped"
}
trap cleanup EXIT

# --- 2. the local cluster, without this operator ----------------------------------------------------------------
(cd "$root" && go build -o "$WORK/local-cluster" ./e2e/cmd/local-cluster)
(cd "$root" && exec "$WORK/local-cluster" run --no-operator --crds "$WORK/crds" >"$WORK/cluster.out" 2>"$WORK/cluster.err") &
pids+=($!)
for _ in $(seq 600); do grep -q '^admin kubeconfig:' "$WORK/cluster.out" 2>/dev/null && break; sleep 1; done
KUBECONFIG=$(awk '/^admin kubeconfig:/ {print $3}' "$WORK/cluster.out")
kubectl_dir=$(dirname "$(awk '/^kubectl/ {print $NF}' "$WORK/cluster.out")")
[ -n "$KUBECONFIG" ] || { cat "$WORK/cluster.err" >&2; exit 1; }
export KUBECONFIG PATH=$kubectl_dir:$PATH
log "cluster ready: KUBECONFIG=$KUBECONFIG"

# --- 3. JobManager REST names resolvable from this host ----------------------------------------------------------
(
  while :; do
    lines=$(kubectl get pods -A -l component=jobmanager --field-selector=status.phase=Running \
      -o jsonpath='{range .items[*]}{.status.podIP} {.metadata.labels.app}-rest.{.metadata.namespace}{"\n"}{end}' 2>/dev/null |
      awk 'NF==2 {print $1, $2, $2".svc", $2".svc.cluster.local"}' | sort -u)
    new=$(awk '/^# BEGIN upstream-rec/{skip=1} !skip{print} /^# END upstream-rec/{skip=0}' /etc/hosts)
    [ -z "$lines" ] || new="$new"$'\n'"# BEGIN upstream-rec"$'\n'"$lines"$'\n'"# END upstream-rec"
    [ "$new" = "$(cat /etc/hosts)" ] || printf '%s\n' "$new" > /etc/hosts
    sleep 2
  done
) &
pids+=($!)

# --- 4. upstream's operator ------------------------------------------------------------------------------------
(
  export FLINK_CONF_DIR=$WORK/conf KUBERNETES_SERVICE_HOST=kubernetes.default.svc
  exec java -cp "$src/flink-kubernetes-standalone/target/flink-kubernetes-standalone-$version.jar:$target/flink-kubernetes-operator-$version-shaded.jar:$target/log4j/*" \
    -Dlog4j.configurationFile="$WORK/conf/log4j-operator.properties" \
    org.apache.flink.kubernetes.operator.FlinkOperator >"$WORK/operator.log" 2>&1
) &
pids+=($!)
for _ in $(seq 120); do grep -q "'flinkdeploymentcontroller' controller started" "$WORK/operator.log" && break; sleep 1; done
log "upstream's operator started (log $WORK/operator.log)"

# --- 5. scenarios --------------------------------------------------------------------------------------------------
m=$rec/manifests
YQ=${YQ:-$("$root/hack/build-yq.sh")/yq}
wait_for() { kubectl wait "$1" --for=jsonpath="$2" --timeout="${3:-5m}" >/dev/null; }

# dump <scenario> <FlinkDeployment> [FlinkSessionJob]
dump() {
  local dir=$OUT/$1 name=$2 sj=${3:-} t s kind o
  rm -rf "$dir" && mkdir -p "$dir"
  one() { kubectl get "$1" "$2" -o yaml | "$YQ" 'del(.metadata.managedFields)' > "$dir/$1-$2.yaml"; }
  one flinkdeployment "$name"
  [ -z "$sj" ] || one flinksessionjob "$sj"
  for t in $name $sj; do
    for s in $(kubectl get flinkstatesnapshots -o jsonpath="{range .items[?(@.spec.jobReference.name==\"$t\")]}{.metadata.name}{\"\n\"}{end}"); do
      one flinkstatesnapshot "$s"
    done
    for kind in deployment service configmap pod; do
      for o in $(kubectl get "$kind" -l app="$t" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'); do one "$kind" "$o"; done
    done
  done
  log "dumped $1: $(ls "$dir" | wc -l) objects"
}

# Two native applications, running.
kubectl apply -f "$m/run.yaml" -f "$m/suspended.yaml"
for d in run suspended; do wait_for "flinkdep/$d" '{.status.lifecycleState}'=STABLE; wait_for "flinkdep/$d" '{.status.jobStatus.state}'=RUNNING; done
sleep 20 # a few checkpoints (5 s interval)
# A savepoint of run by a FlinkStateSnapshot; suspended suspended with a savepoint.
kubectl apply -f "$m/run-savepoint.yaml"
kubectl patch flinkdep suspended --type=merge -p '{"spec":{"job":{"state":"suspended"}}}'
wait_for flinksnp/run-savepoint '{.status.state}'=COMPLETED
wait_for flinkdep/suspended '{.status.lifecycleState}'=SUSPENDED
# A native session cluster with a session job (jar fetched by the operator from file://), a standalone application.
kubectl apply -f "$m/session.yaml" -f "$m/standalone.yaml"
wait_for flinkdep/session '{.status.jobManagerDeploymentStatus}'=READY
kubectl apply -f "$m/session-job.yaml"
wait_for flinksessionjob/session-job '{.status.jobStatus.state}'=RUNNING
wait_for flinkdep/standalone '{.status.jobStatus.state}'=RUNNING
wait_for flinkdep/standalone '{.status.lifecycleState}'=STABLE
# More snapshots: savepoints of the session job and the standalone application, a checkpoint of run.
kubectl apply -f "$m/session-job-savepoint.yaml" -f "$m/standalone-savepoint.yaml" -f "$m/run-checkpoint.yaml"
for s in session-job-savepoint standalone-savepoint run-checkpoint; do wait_for "flinksnp/$s" '{.status.state}'=COMPLETED; done
sleep 30 # the suspended cluster's idle TaskManager is released (resourcemanager.taskmanager-timeout)
dump native-running-with-snapshots run
dump native-suspended-savepoint suspended
dump native-session-with-sessionjob session session-job
dump standalone-application-running standalone
# Next states: run upgraded with a savepoint (parallelism 1 -> 2), suspended resumed, standalone suspended.
kubectl patch flinkdep suspended --type=merge -p '{"spec":{"job":{"state":"running"}}}'
kubectl patch flinkdep run --type=merge -p '{"spec":{"job":{"parallelism":2}}}'
kubectl patch flinkdep standalone --type=merge -p '{"spec":{"job":{"state":"suspended"}}}'
sleep 20
wait_for flinkdep/suspended '{.status.lifecycleState}'=STABLE
wait_for flinkdep/run '{.status.lifecycleState}'=STABLE
wait_for flinkdep/standalone '{.status.lifecycleState}'=SUSPENDED
dump native-upgraded-savepoint run
dump native-resumed-from-savepoint suspended
dump standalone-suspended-savepoint standalone
# The session job suspended with a savepoint.
kubectl patch flinksessionjob session-job --type=merge -p '{"spec":{"job":{"state":"suspended"}}}'
sleep 10
wait_for flinksessionjob/session-job '{.status.lifecycleState}'=SUSPENDED
sleep 5
dump native-session-job-suspended-savepoint session session-job
kubectl get events -A -o wide > "$WORK/events.txt" || true
log "done: $OUT"
