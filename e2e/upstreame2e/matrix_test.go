package upstreame2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// line is a Flink line of upstream CI's flink-version input that the node
// agent runs: every flink:<major>.<minor> image of it runs the pinned
// release.
type line struct {
	// version is CI's flink-version input (flinkVersion of the data).
	version string
	// pinned is the release e2e/flink runs for the line's images.
	pinned string
	// examples is the version of flink-examples-streaming whose jar is
	// STREAMING_EXAMPLES_JAR_URL (e2e/flink resolves it into ~/.m2: 1.20.0
	// for 1.20.5, see e2e/flink's README; CI: 2.0.0 for the 2.x lines,
	// 1.14.4, or 1.20.1 for test_batch_job.sh, for v1_20).
	examples string
}

// lines are the Flink lines the harness runs, in order (CI's matrix runs
// v2_2, v2_1, v2_0 and v1_20; the node agent pins 2.3.0 for the 2.x
// lines and 1.20.5 for 1.20).
var lines = []line{
	{version: "v2_3", pinned: "2.3.0", examples: "2.3.0"},
	{version: "v1_20", pinned: "1.20.5", examples: "1.20.0"},
}

// modes are CI's mode input values.
var modes = []string{"native", "standalone"}

// upstreamScript is one script of release-1.15.0's e2e-tests and how
// upstream's CI (.github/workflows/ci.yml) runs it.
type upstreamScript struct {
	name string
	// nativeOnly: CI's matrix excludes standalone mode for it, or (the
	// blue/green scripts, which no CI job runs) the harness runs native
	// mode only.
	nativeOnly bool
	// namespaceTest: CI runs it only in e2e_namespace_tests: the operator
	// in namespace flink (created first), watching default and flink.
	namespaceTest bool
	// notInCI: no CI job of the release runs it.
	notInCI bool
	// pending, when set, is why the script cannot pass here yet and what
	// enables it: it still runs, and passing fails the run (remove it
	// from pending then).
	pending string
	// pendingOn is pending on some lines only (line version -> reason).
	pendingOn map[string]string
}

// pendingReason is why the script is pending on line l ("" if it is not).
func (s upstreamScript) pendingReason(l line) string {
	if s.pending != "" {
		return s.pending
	}
	return s.pendingOn[l.version]
}

// upstreamScripts are all the scripts of release-1.15.0's e2e-tests, in
// the order the harness runs them.
var upstreamScripts = []upstreamScript{
	{name: "test_snapshot.sh"},
	{name: "test_application_operations.sh"},
	{name: "test_sessionjob_operations.sh"},
	{name: "test_batch_job.sh"},
	{name: "test_application_kubernetes_ha.sh"},
	{name: "test_sessionjob_kubernetes_ha.sh"},
	{name: "test_multi_sessionjob.sh", namespaceTest: true},
	{name: "test_autoscaler.sh", nativeOnly: true},
	{name: "test_bluegreen_stateless.sh", nativeOnly: true, notInCI: true},
	{name: "test_bluegreen_laststate.sh", nativeOnly: true, notInCI: true, pendingOn: map[string]string{"v2_3": "the transition savepoint never completes on Flink 2.3: " +
		"its StateMachineExample keeps keyed state with the async state API, and Flink 2.3 declines a canonical savepoint of it " +
		"(UnsupportedOperationException \"Not supported yet\" at StreamOperatorStateHandler.snapshotState), so the job fails over and green is never created; " +
		"enables it: a Flink 2.x release that takes canonical savepoints of async state (upstream's CI runs no blue/green script)"}},
	{name: "test_bluegreen_ingress_rotation.sh", nativeOnly: true, notInCI: true},
	{name: "test_flink_operator_ha.sh"},
	{name: "test_dynamic_config.sh"},
	{name: "test_dynamic_flink_conf.sh"},
	{name: "test_logback_logging.sh", pending: "checks upstream's Java operator's logback setup: SLF4J bindings, the log pattern (`o.a.f.k.o.` logger names, `[INFO ]`) of " +
		"\"Starting Flink Kubernetes Operator\", LOGGING_FRAMEWORK=logback and LOG_CONFIG env, /opt/flink/conf/logback-operator.xml mounted in the operator " +
		"container; this operator is a Go binary logging with klog, and the chart keeps logging.framework as an unused value " +
		"(enables it: nothing planned; logback is a JVM logging framework, and mounting its file and setting its variables for a binary that never reads them would only fake the check)"},
}

func scriptNamed(name string) (upstreamScript, bool) {
	i := slices.IndexFunc(upstreamScripts, func(s upstreamScript) bool { return s.name == name })
	if i < 0 {
		return upstreamScript{}, false
	}
	return upstreamScripts[i], true
}

// cell is one run: a script on a line in a mode.
type cell struct {
	line   line
	mode   string
	script upstreamScript
}

func (c cell) String() string { return c.line.version + "/" + c.mode + "/" + c.script.name }

// Selectors (comma-separated; empty: all).
const (
	envScripts = "FLINKOP_UPSTREAM_E2E_SCRIPTS" // script file names
	envLines   = "FLINKOP_UPSTREAM_E2E_LINES"   // v2_3, v1_20
	envModes   = "FLINKOP_UPSTREAM_E2E_MODES"   // native, standalone
)

// selectCells is the matrix (lines x modes x scripts, modes as CI runs
// each script) narrowed by the selectors.
func selectCells() ([]cell, error) {
	pick := func(env string, all []string) ([]string, error) {
		v := strings.TrimSpace(os.Getenv(env))
		if v == "" {
			return all, nil
		}
		var out []string
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(all, s) {
				return nil, fmt.Errorf("%s: %q is not one of %v", env, s, all)
			}
			out = append(out, s)
		}
		return out, nil
	}
	var names, versions []string
	for _, s := range upstreamScripts {
		names = append(names, s.name)
	}
	for _, l := range lines {
		versions = append(versions, l.version)
	}
	selScripts, err := pick(envScripts, names)
	if err != nil {
		return nil, err
	}
	selLines, err := pick(envLines, versions)
	if err != nil {
		return nil, err
	}
	selModes, err := pick(envModes, modes)
	if err != nil {
		return nil, err
	}
	var cells []cell
	for _, l := range lines {
		if !slices.Contains(selLines, l.version) {
			continue
		}
		for _, m := range modes {
			if !slices.Contains(selModes, m) {
				continue
			}
			for _, s := range upstreamScripts {
				if !slices.Contains(selScripts, s.name) || (s.nativeOnly && m != "native") {
					continue
				}
				cells = append(cells, cell{line: l, mode: m, script: s})
			}
		}
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("%s=%q %s=%q %s=%q select no run (standalone mode: not for %v)", envScripts, os.Getenv(envScripts),
			envLines, os.Getenv(envLines), envModes, os.Getenv(envModes), nativeOnlyNames())
	}
	return cells, nil
}

func nativeOnlyNames() []string {
	var out []string
	for _, s := range upstreamScripts {
		if s.nativeOnly {
			out = append(out, s.name)
		}
	}
	return out
}

// outcome of a cell.
type outcome string

const (
	pass    outcome = "pass"
	pending outcome = "pending"
	fail    outcome = "fail"
)

// judge is a cell's outcome from the script's result: a pending script
// that fails is pending; one that passes fails the run (it must leave the
// pending list), as does any other script that fails.
func judge(c cell, scriptErr error) (outcome, error) {
	why := c.script.pendingReason(c.line)
	switch {
	case why == "" && scriptErr == nil:
		return pass, nil
	case why == "":
		return fail, scriptErr
	case scriptErr == nil:
		return fail, fmt.Errorf("%s is listed as pending on %s (%s) but passed: remove it from the pending list in matrix_test.go, doc.go and the README", c.script.name, c.line.version, why)
	default:
		return pending, nil
	}
}
