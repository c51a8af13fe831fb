// Package decide chooses per-vertex parallelisms for a job from its
// evaluated metrics (package evaluate), its scaling history and the
// autoscaler options, as upstream's JobVertexScaler and ScalingExecutor do,
// with a report of why for events and metrics. It is pure: the caller passes
// the time, the metrics and the stored State, and stores the State it gets
// back.
//
// Where it deliberately differs from upstream (each says why where it is
// implemented, and docs/autoscaler.md lists them):
//   - scale-down hysteresis: a vertex's scale-down waits for the whole
//     scale-down.interval with its utilization below the lower bound at every
//     evaluation; upstream starts the wait at any lower recommendation, even
//     inside the band (pendingScaleDown).
//   - restart cost: a scale-up of a vertex that is already draining its
//     backlog is refused when the restart would make that backlog take longer
//     to drain than not scaling (restartCostTooHigh).
//   - effectiveness: a scale-up is judged ineffective only when the shortfall
//     is larger than the noise of the measurement (ineffective).
package decide

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/evaluate"
	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
	"github.com/flinkops/flink-operator/pkg/autoscaler/periods"
)

// Input is everything one decision depends on.
type Input struct {
	Graph   evaluate.Graph
	Samples []evaluate.Sample // time-ordered; Decide picks the window
	// RunningSince is when the job last started running (after a deploy,
	// an upgrade or a rescale).
	RunningSince time.Time
	Now          time.Time
	Options      options.Options
	// ResetNonce is the job spec's autoscalerResetNonce.
	ResetNonce int64
	State      State
}

// Decision is the outcome.
type Decision struct {
	// Scale is true when the job must be rescaled to Overrides.
	Scale bool
	// Reset is true when the reset nonce changed: the history is gone and
	// the caller must remove the parallelism overrides.
	Reset bool
	// Overrides are the parallelisms in force after the decision, every
	// vertex of the job when Scale is true.
	Overrides map[string]int
	// Reason says, in a sentence, why the job is or is not rescaled.
	Reason   string
	Vertices []VertexReport
	State    State
}

// VertexReport is one vertex's line of the ScalingReport.
type VertexReport struct {
	ID                  string
	Current             int
	Recommended         int // = Current when no change is proposed
	TrueProcessingRate  float64
	TargetRate          float64
	CatchUpRate         float64
	Utilization         float64
	OutsideBounds       bool
	Excluded            bool
	ScaleDownPendingFor time.Duration // how long a scale-down has waited
	Note                string        // why the recommendation is what it is
}

// OverridesString renders overrides as pipeline.jobvertex-parallelism-overrides
// wants them: "<vertex id>:<parallelism>" joined by commas, sorted by id so
// the same decision always gives the same string.
func OverridesString(overrides map[string]int) string {
	ids := slices.Sorted(maps.Keys(overrides))
	parts := make([]string, len(ids))
	for n, id := range ids {
		parts[n] = id + ":" + strconv.Itoa(overrides[id])
	}
	return strings.Join(parts, ",")
}

// Decide makes one decision.
func Decide(in Input) (Decision, error) {
	o := in.Options
	if in.ResetNonce != in.State.ResetNonce {
		return Decision{Reset: true, State: State{ResetNonce: in.ResetNonce},
			Reason: fmt.Sprintf("autoscalerResetNonce changed from %d to %d: scaling history and parallelism overrides cleared", in.State.ResetNonce, in.ResetNonce)}, nil
	}
	state := in.State.trim(in.Now, o)
	out := Decision{State: state, Overrides: state.Overrides}
	if !o.Enabled {
		out.Reason = "autoscaler disabled (job.autoscaler.enabled is false)"
		return out, nil
	}
	window, ready := evaluate.Window(in.Samples, in.RunningSince, in.Now, o)
	if !ready.Ready {
		if ready.Stabilizing {
			out.Reason = fmt.Sprintf("stabilizing after the job started: no decision before %s", ready.Until.UTC().Format(time.RFC3339))
		} else {
			out.Reason = fmt.Sprintf("metrics window not full: no decision before %s", ready.Until.UTC().Format(time.RFC3339))
		}
		return out, nil
	}
	excludedPeriods, err := periods.ParseAll(o.ExcludedPeriods)
	if err != nil {
		return Decision{}, fmt.Errorf("%s%s: %w", options.Prefix, "excluded.periods", err)
	}
	restart := RestartTime(state, o)
	ev, err := evaluate.Evaluate(in.Graph, window, o, restart)
	if err != nil {
		return Decision{}, err
	}

	excluded := map[string]bool{}
	for _, id := range o.VertexExcludeIDs {
		excluded[id] = true
	}
	pending := map[string]PendingScaleDown{}
	changes := map[string]VertexChange{}
	anyOutside := false
	for _, id := range ev.Order {
		m := ev.Vertices[id]
		r := VertexReport{ID: id, Current: m.Parallelism, Recommended: m.Parallelism,
			TrueProcessingRate: m.TrueProcessingRate, TargetRate: m.TargetRate, CatchUpRate: m.CatchUpRate,
			Utilization: m.Utilization(), OutsideBounds: m.OutsideBounds()}
		if excluded[id] {
			r.Excluded, r.Note = true, "excluded by vertex.exclude.ids"
			out.Vertices = append(out.Vertices, r)
			continue
		}
		p, expected, note := recommend(m, state, o, restart)
		r.Note = note
		switch {
		case p > m.Parallelism:
			why, blocked := blockScaleUp(m, p, state, o, restart)
			if why != "" {
				r.Note = why
			}
			if !blocked {
				r.Recommended = p
			}
		case p < m.Parallelism:
			ps, wait, ok := pendingScaleDown(state.PendingScaleDowns[id], m, p, ev.ProcessingBacklog, in.Now, o)
			if !ok {
				r.Note = fmt.Sprintf("%d would do, but utilization is within bounds (or the job is catching up): no scale-down", p)
				break
			}
			pending[id] = ps
			r.ScaleDownPendingFor = in.Now.Sub(ps.Since)
			if wait > 0 {
				r.Note = fmt.Sprintf("scale-down to %d waits %s more (scale-down.interval)", p, wait.Round(time.Second))
				break
			}
			r.Recommended = maxRecommendation(ps, in.Now.Add(-o.ScaleDownInterval))
			r.Note = fmt.Sprintf("utilization below the lower bound for %s", o.ScaleDownInterval)
		}
		if r.Recommended != m.Parallelism {
			if r.Recommended != p {
				expected = m.TrueProcessingRate * float64(r.Recommended) / float64(m.Parallelism)
			}
			changes[id] = VertexChange{From: m.Parallelism, To: r.Recommended, TrueProcessingRate: m.TrueProcessingRate, ExpectedProcessingRate: expected}
			anyOutside = anyOutside || m.OutsideBounds()
		}
		out.Vertices = append(out.Vertices, r)
	}
	out.State.PendingScaleDowns = pending

	switch {
	case len(changes) == 0:
		out.Reason = "no vertex needs a new parallelism"
		return out, nil
	case !anyOutside:
		// As upstream: a restart costs a backlog, so it is only worth it
		// when some vertex is outside its utilization band.
		out.Reason = "every vertex within its utilization bounds"
		return out, nil
	case ev.GCPressure > o.GCPressureThreshold:
		out.Reason = fmt.Sprintf("not scaling: GC pressure %.2f above memory.gc-pressure.threshold %.2f", ev.GCPressure, o.GCPressureThreshold)
		return out, nil
	case ev.HeapUsage > o.HeapUsageThreshold:
		out.Reason = fmt.Sprintf("not scaling: heap usage %.2f above memory.heap-usage.threshold %.2f", ev.HeapUsage, o.HeapUsageThreshold)
		return out, nil
	}
	if p, ok := periods.Any(excludedPeriods, in.Now); ok {
		out.Reason = fmt.Sprintf("not scaling: %s is in excluded period %q", in.Now.Format(time.RFC3339), p.String())
		return out, nil
	}
	if !o.ScalingEnabled {
		out.Reason = "recommendation only: job.autoscaler.scaling.enabled is false"
		return out, nil
	}

	overrides := map[string]int{}
	for _, id := range ev.Order {
		overrides[id] = ev.Vertices[id].Parallelism
		if c, ok := changes[id]; ok {
			overrides[id] = c.To
		}
	}
	out.Scale = true
	out.Overrides = overrides
	out.State.Overrides = overrides
	out.State.PendingScaleDowns = nil // a restart starts every wait afresh
	out.State.Scalings = append(out.State.Scalings, Scaling{Time: in.Now, Vertices: changes})
	out.State = out.State.trim(in.Now, o)
	ids := slices.Sorted(maps.Keys(changes))
	parts := make([]string, len(ids))
	for n, id := range ids {
		parts[n] = fmt.Sprintf("%s %d→%d", id, changes[id].From, changes[id].To)
	}
	out.Reason = "rescaling " + strings.Join(parts, ", ")
	return out, nil
}

// recommend is the parallelism a vertex needs to run at the target
// utilization while draining its backlog and the backlog of a restart within
// catch-up.duration, within one step's limits, and the processing rate that
// parallelism is expected to reach.
func recommend(m evaluate.Metrics, s State, o options.Options, restart time.Duration) (p int, expected float64, note string) {
	if math.IsNaN(m.TrueProcessingRate) {
		return m.Parallelism, math.NaN(), "true processing rate unknown"
	}
	if math.IsInf(m.TrueProcessingRate, 1) {
		return m.Parallelism, math.NaN(), "no records flowing: capacity cannot be measured"
	}
	target := evaluate.TargetCapacity(m, o, o.UtilizationTarget, restart)
	if math.IsNaN(target) {
		return m.Parallelism, math.NaN(), "target rate unknown"
	}
	factor := target / m.TrueProcessingRate
	if c := observedScalingCoefficient(s.changes(m.ID), o); c != 1 {
		factor /= c
	}
	low, high := scaleFactorLimits(o)
	factor = math.Min(math.Max(factor, low), high)
	p, note = newParallelism(m.Parallelism, m.MaxParallelism, m.AlignTo, factor, o)
	return p, m.TrueProcessingRate * factor, note
}

// blockScaleUp returns why a scale-up must not happen (blocked) or a note
// worth reporting though it goes ahead.
func blockScaleUp(m evaluate.Metrics, p int, s State, o options.Options, restart time.Duration) (why string, blocked bool) {
	if last, ok := s.lastChange(m.ID); ok && last.To == m.Parallelism && last.To > last.From && ineffective(last, m, o) {
		msg := fmt.Sprintf("last scale-up %d→%d was ineffective: processing rate %.0f→%.0f, expected %.0f",
			last.From, last.To, last.TrueProcessingRate, m.TrueProcessingRate, last.ExpectedProcessingRate)
		if o.EffectivenessDetectionEnabled {
			return msg + "; further scale-ups blocked", true
		}
		why = msg + " (scaling.effectiveness.detection.enabled is false: scaling anyway)"
	}
	if restartCostTooHigh(m, p, restart, o) {
		return fmt.Sprintf("scale-up to %d refused: the backlog drains sooner without the %s restart", p, restart), true
	}
	return why, false
}

// ineffective compares the capacity a scale-up reached with what it was
// expected to reach: less than scaling.effectiveness.threshold of the
// expected increase is ineffective (as upstream). Unlike upstream, the
// shortfall must also exceed twice the standard error of the measured
// capacity: with noisy busy-time metrics, upstream's single-window
// comparison flagged good scalings as ineffective, which is why it ships
// the detection disabled (FLINK-32002, PR #594).
func ineffective(last VertexChange, m evaluate.Metrics, o options.Options) bool {
	expectedIncrease := last.ExpectedProcessingRate - last.TrueProcessingRate
	if !(expectedIncrease > 0) || math.IsInf(m.TrueProcessingRate, 0) || math.IsNaN(m.TrueProcessingRate) {
		return false
	}
	actualIncrease := m.TrueProcessingRate - last.TrueProcessingRate
	if actualIncrease/expectedIncrease >= o.EffectivenessThreshold {
		return false
	}
	noise := 2 * m.TPRStdErr
	if math.IsInf(noise, 0) || math.IsNaN(noise) {
		return false // a single sample cannot tell noise from failure
	}
	return o.EffectivenessThreshold*expectedIncrease-actualIncrease > noise
}

// restartCostTooHigh says whether a scale-up would make the vertex's backlog
// take longer to drain than keeping the current parallelism. It applies only
// to a vertex that is draining already (capacity above the arrival rate, a
// backlog to drain): with capacity C, arrival r and backlog L, draining takes
// L/(C-r) without scaling, and restart + (L + r·restart)/(C'-r) with the new
// capacity C'. Upstream never weighs this and scales up into a restart that
// adds more backlog than the extra capacity removes (the vicious cycle
// described in FLINK-31318); a vertex that cannot keep up (C <= r) always
// scales.
func restartCostTooHigh(m evaluate.Metrics, p int, restart time.Duration, o options.Options) bool {
	c, r := m.TrueProcessingRate, m.TargetRate
	backlog := m.CatchUpRate * o.CatchUpDuration.Seconds() // records
	if !(c > r) || !(backlog > 0) || restart <= 0 || p <= m.Parallelism {
		return false
	}
	newC := c * float64(p) / float64(m.Parallelism)
	rs := restart.Seconds()
	without := backlog / (c - r)
	with := rs + (backlog+r*rs)/(newC-r)
	return with >= without
}

// pendingScaleDown updates the wait of a vertex's scale-down. ok is false
// when the vertex is not (or no longer) under its lower utilization bound:
// the wait is then dropped, so a load that dips and returns within
// scale-down.interval never scales down. wait is how long the scale-down
// must still wait.
//
// Deliberate difference (hysteresis): upstream starts the wait at any
// evaluation that recommends fewer subtasks, even one inside the utilization
// band, and rescales such vertices along with any other rescale once the
// interval has passed; here only a vertex below the band's lower bound at
// every evaluation of the interval is scaled down, so a job that sits inside
// its band keeps its parallelism.
func pendingScaleDown(prev PendingScaleDown, m evaluate.Metrics, p int, backlog bool, now time.Time, o options.Options) (PendingScaleDown, time.Duration, bool) {
	if backlog || !(m.TrueProcessingRate > m.ScaleDownThreshold) {
		return PendingScaleDown{}, 0, false
	}
	if prev.Since.IsZero() {
		prev = PendingScaleDown{Since: now}
	}
	prev.Recommendations = append(prev.Recommendations, Recommendation{Time: now, Parallelism: p})
	// Keep only what the interval can still use.
	cut := now.Add(-o.ScaleDownInterval)
	kept := prev.Recommendations[:0]
	for _, r := range prev.Recommendations {
		if !r.Time.Before(cut) {
			kept = append(kept, r)
		}
	}
	prev.Recommendations = kept
	wait := prev.Since.Add(o.ScaleDownInterval).Sub(now)
	return prev, max(wait, 0), true
}

// maxRecommendation is the largest parallelism recommended since `since`:
// scaling down to the peak demand of the interval, not the latest, is what
// keeps a scale-down from being undone by the next peak (as upstream).
func maxRecommendation(ps PendingScaleDown, since time.Time) int {
	best := 0
	for _, r := range ps.Recommendations {
		if !r.Time.Before(since) {
			best = max(best, r.Parallelism)
		}
	}
	return best
}
