package upstreame2e

import (
	"errors"
	"slices"
	"testing"
)

// TestMatrix checks the matrix and the pending rule without a cluster: a
// pending script that passes fails the run, one that fails is pending; the
// selectors narrow the matrix and refuse unknown names; standalone mode
// runs what CI runs in it.
func TestMatrix(t *testing.T) {
	v2, v1 := line{version: "v2_3"}, line{version: "v1_20"}
	p := cell{line: v2, script: upstreamScript{name: "p.sh", pending: "why"}}
	ok := cell{line: v2, script: upstreamScript{name: "ok.sh"}}
	onV2 := upstreamScript{name: "l.sh", pendingOn: map[string]string{"v2_3": "why"}}
	failed := errors.New("exit status 1")
	for _, c := range []struct {
		c    cell
		err  error
		want outcome
		bad  bool
	}{{ok, nil, pass, false}, {ok, failed, fail, true}, {p, failed, pending, false}, {p, nil, fail, true},
		{cell{line: v2, script: onV2}, failed, pending, false}, {cell{line: v2, script: onV2}, nil, fail, true},
		{cell{line: v1, script: onV2}, failed, fail, true}, {cell{line: v1, script: onV2}, nil, pass, false}} {
		got, err := judge(c.c, c.err)
		if got != c.want || (err != nil) != c.bad {
			t.Errorf("judge(%s, %v) = %s, %v; want %s, error %v", c.c, c.err, got, err, c.want, c.bad)
		}
	}

	t.Setenv(envScripts, "")
	t.Setenv(envLines, "")
	t.Setenv(envModes, "")
	all, err := selectCells()
	if err != nil {
		t.Fatal(err)
	}
	native := len(upstreamScripts)
	standalone := native - len(nativeOnlyNames())
	if want := len(lines) * (native + standalone); len(all) != want {
		t.Errorf("full matrix: %d runs, want %d", len(all), want)
	}
	for _, c := range all {
		if c.mode == "standalone" && slices.Contains([]string{"test_autoscaler.sh", "test_bluegreen_stateless.sh"}, c.script.name) {
			t.Errorf("%s: CI runs it in native mode only", c)
		}
	}

	t.Setenv(envScripts, "test_autoscaler.sh,test_batch_job.sh")
	t.Setenv(envLines, "v1_20")
	t.Setenv(envModes, "standalone")
	got, err := selectCells()
	if err != nil || len(got) != 1 || got[0].String() != "v1_20/standalone/test_batch_job.sh" {
		t.Errorf("selected %v, %v; want only v1_20/standalone/test_batch_job.sh", got, err)
	}
	t.Setenv(envScripts, "test_autoscaler.sh")
	if got, err := selectCells(); err == nil {
		t.Errorf("autoscaler in standalone mode selected %v, want an error", got)
	}
	t.Setenv(envModes, "")
	t.Setenv(envLines, "v1_17")
	if _, err := selectCells(); err == nil {
		t.Error("unknown line accepted")
	}
	for _, s := range upstreamScripts {
		for _, l := range lines {
			if why := s.pendingReason(l); why != "" && len(why) < 40 {
				t.Errorf("%s on %s: pending needs a reason and what enables it, got %q", s.name, l.version, why)
			}
		}
	}
}
