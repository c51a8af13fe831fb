package snapshotrules

import (
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/config"
)

// TestPeriodicRequeueIsNeverZero pins that a plan with periodic snapshots
// always asks to be woken again: when the catch-up over missed slots stops
// short (latestSlot looks at most 100000 slots ahead) and the following slot
// is already due, the requeue is one second, never 0 (which would mean "no
// periodic snapshot scheduled" and stall the schedule).
func TestPeriodicRequeueIsNeverZero(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "* * * * * ?"}) // every second
	v.CheckpointsSupported = false
	for _, down := range []time.Duration{100002 * time.Second, 100010 * time.Second} {
		p, err := PlanSnapshots(v, base.Add(down))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Create) != 1 || p.RequeueAfter != time.Second {
			t.Errorf("down %v: created %s, requeue %v; want one snapshot and a requeue in 1s", down, names(p.Create), p.RequeueAfter)
		}
	}
}
