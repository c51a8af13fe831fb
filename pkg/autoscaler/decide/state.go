package decide

import (
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/evaluate"
	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
)

// State is what the autoscaler remembers between decisions (upstream keeps
// it in the autoscaler ConfigMap). Decide never changes its input; it returns
// the next State, which the caller stores.
type State struct {
	// ResetNonce is the job's autoscalerResetNonce this state was built
	// under; a different nonce in the spec clears the state.
	ResetNonce int64
	// Scalings are the applied decisions, oldest first.
	Scalings []Scaling
	// PendingScaleDowns are vertices whose scale-down waits for
	// scale-down.interval, by vertex id.
	PendingScaleDowns map[string]PendingScaleDown
	// Overrides are the parallelism overrides in force, by vertex id.
	Overrides map[string]int
}

// NewState is the state of a job the autoscaler has not seen before, built
// under the spec's current nonce: a job that starts with a nonce set is not
// reset (upstream resets only when the nonce changes).
func NewState(resetNonce int64) State { return State{ResetNonce: resetNonce} }

// Scaling is one applied decision.
type Scaling struct {
	Time     time.Time
	Vertices map[string]VertexChange
	// RestartDuration is the time from the decision until the job ran again
	// at the new parallelism; 0 until observed (see RecordRestart).
	RestartDuration time.Duration
}

// VertexChange is what one decision did to one vertex, with the rates the
// effectiveness check compares later.
type VertexChange struct {
	From, To int
	// TrueProcessingRate was the vertex's capacity before the change;
	// ExpectedProcessingRate the capacity the change aimed at.
	TrueProcessingRate, ExpectedProcessingRate float64
}

// PendingScaleDown is a scale-down waiting for its interval.
type PendingScaleDown struct {
	Since time.Time
	// Recommendations are the parallelisms proposed at each evaluation since.
	Recommendations []Recommendation
}

// Recommendation is one evaluation's proposal for a pending scale-down.
type Recommendation struct {
	Time          time.Time
	Parallelism   int
	OutsideBounds bool // the vertex was outside its utilization band
}

// RecordRestart stores how long the latest scaling took to take effect:
// runningSince is when the job was running again, and the duration is only
// recorded once the graph shows every scaled vertex at its new parallelism
// (a restart that failed or was overridden says nothing about restart time).
// Measuring to the RUNNING transition, not to the first usable metrics,
// keeps stabilization.interval out of the figure (the mistake upstream fixed
// in FLINK-34178).
func RecordRestart(s State, g evaluate.Graph, runningSince time.Time) State {
	if len(s.Scalings) == 0 {
		return s
	}
	last := s.Scalings[len(s.Scalings)-1]
	if last.RestartDuration > 0 || runningSince.Before(last.Time) {
		return s
	}
	actual := map[string]int{}
	for _, v := range g {
		actual[v.ID] = v.Parallelism
	}
	for id, c := range last.Vertices {
		if actual[id] != c.To {
			return s
		}
	}
	out := s.clone()
	d := runningSince.Sub(last.Time)
	if d <= 0 {
		d = time.Nanosecond // ran again at once; 0 would read as "not observed"
	}
	out.Scalings[len(out.Scalings)-1].RestartDuration = d
	return out
}

// RestartTime is the restart time decisions assume: restart.time, or, with
// restart.time-tracking.enabled, the longest observed restart among the
// kept scalings, capped by restart.time-tracking.limit (as upstream). The
// longest, not the latest, because underestimating it leaves a backlog the
// job cannot catch up within catch-up.duration.
func RestartTime(s State, o options.Options) time.Duration {
	if !o.RestartTimeTrackingEnabled {
		return o.RestartTime
	}
	var longest time.Duration
	for _, sc := range s.Scalings {
		longest = max(longest, sc.RestartDuration)
	}
	if longest == 0 {
		return o.RestartTime
	}
	return min(longest, o.RestartTimeTrackingLimit)
}

// trim drops scalings older than history.max.age and keeps, per vertex, at
// most history.max.count of its changes (upstream keeps its history per
// vertex too), but always the latest scaling: its restart may still be
// measured, and the effectiveness check needs it.
func (s State) trim(now time.Time, o options.Options) State {
	out := s.clone()
	cut := now.Add(-o.HistoryMaxAge)
	limit := max(o.HistoryMaxCount, 1)
	seen := map[string]int{} // changes kept per vertex, newest first
	var kept []Scaling
	for n := len(out.Scalings) - 1; n >= 0; n-- {
		sc := out.Scalings[n]
		if n != len(out.Scalings)-1 {
			if sc.Time.Before(cut) {
				continue
			}
			for id := range sc.Vertices {
				if seen[id] >= limit {
					delete(sc.Vertices, id)
				}
			}
			if len(sc.Vertices) == 0 {
				continue
			}
		}
		for id := range sc.Vertices {
			seen[id]++
		}
		kept = append([]Scaling{sc}, kept...)
	}
	out.Scalings = kept
	return out
}

// lastChange is the latest scaling of one vertex, if any.
func (s State) lastChange(id string) (VertexChange, bool) {
	for n := len(s.Scalings) - 1; n >= 0; n-- {
		if c, ok := s.Scalings[n].Vertices[id]; ok {
			return c, true
		}
	}
	return VertexChange{}, false
}

// changes lists one vertex's scalings, oldest first.
func (s State) changes(id string) []VertexChange {
	var out []VertexChange
	for _, sc := range s.Scalings {
		if c, ok := sc.Vertices[id]; ok {
			out = append(out, c)
		}
	}
	return out
}

func (s State) clone() State {
	out := State{ResetNonce: s.ResetNonce}
	for _, sc := range s.Scalings {
		c := sc
		c.Vertices = make(map[string]VertexChange, len(sc.Vertices))
		for k, v := range sc.Vertices {
			c.Vertices[k] = v
		}
		out.Scalings = append(out.Scalings, c)
	}
	if s.PendingScaleDowns != nil {
		out.PendingScaleDowns = make(map[string]PendingScaleDown, len(s.PendingScaleDowns))
		for k, p := range s.PendingScaleDowns {
			p.Recommendations = append([]Recommendation(nil), p.Recommendations...)
			out.PendingScaleDowns[k] = p
		}
	}
	if s.Overrides != nil {
		out.Overrides = make(map[string]int, len(s.Overrides))
		for k, v := range s.Overrides {
			out.Overrides[k] = v
		}
	}
	return out
}
