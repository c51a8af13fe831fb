// Package flink runs real Apache Flink as plain local JVMs, the way the official
// Flink image's docker-entrypoint.sh would run it in a pod, for the operator's
// end-to-end tests and the Kubernetes node agent.
//
// No flink-dist or Docker is involved. For each pinned Flink version (see
// versions.txt and [Versions]) build.sh resolves the runtime classpath from Maven
// Central, compiles a small stateful test job (org.flinkops.testjob.CountingJob)
// and assembles the image's example jars into a cache outside the repository;
// [Ensure] runs it (a no-op when cached).
//
// [Prepare] (or [Command]) turns a container invocation of the image, i.e. the
// mode ("standalone-job", "jobmanager" or "taskmanager", or a native Kubernetes
// mode that [NativeInvocation] finds in Flink's bash -c wrapper:
// "kubernetes-application", "kubernetes-session", "kubernetes-taskmanager") and
// its arguments, plus the mounted configuration directory, into a java command
// line:
//
//   - the main class the image's scripts would run, with --configDir;
//   - the JVM memory flags and memory -D options that the scripts compute with
//     BashJavaUtils (GET_JM_RESOURCE_PARAMS / GET_TM_RESOURCE_PARAMS), or, for a
//     native TaskManager, the flags Flink's resource manager passes in
//     FLINK_TM_JVM_MEM_OPTS;
//   - the Java 17 --add-opens/--add-exports flags, and env.java.opts.* from the
//     configuration;
//   - every server socket bound to the pod's own loopback address, so several
//     JobManagers can each listen on 8081;
//   - a private "/opt/flink" per process (the container's file system) as the
//     working directory, whose usrlib/ holds the test job jar and whose
//     examples/streaming holds Flink's own example jars (StateMachineExample.jar,
//     WordCount.jar, TopSpeedWindowing.jar, ...), and image paths
//     (local:///opt/flink/...) in arguments and configuration mapped onto it.
//
// [Start] runs the command in its own process group and [Process.Stop] ends the
// whole group.
package flink
