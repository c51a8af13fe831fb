// Package tryit runs the README's "Try it" section exactly as written, the
// way a newcomer would: `make run`'s command (e2e/cmd/local-cluster run) is
// started as a process, then every line of the section's sh blocks runs in
// one bash (errexit, pipefail) from the module root — source .cache/env,
// kubectl apply/wait/patch/logs/delete, curl of the Flink UI. A command that
// fails or a wait that times out fails the test, so the README cannot drift
// from what works. Afterwards the savepoint the section took must be gone
// from disk (its clean-up comment promises the files are disposed of), the
// cluster's events must hold no EndpointSlice warnings, and an interrupt
// (Ctrl-C) must stop everything with exit code 0 and remove .cache/env.
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 20m -v ./e2e/tryit/
//
// It writes <module root>/.cache/env, as make run does: do not run it beside
// a make run of the same checkout.
package tryit
