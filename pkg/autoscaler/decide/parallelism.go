package decide

import (
	"math"

	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
)

// scaleFactorLimits caps one step: at most scale-up.max-factor above and
// scale-down.max-factor below the current capacity.
func scaleFactorLimits(o options.Options) (low, high float64) {
	return 1 - o.ScaleDownMaxFactor, 1 + o.ScaleUpMaxFactor
}

// newParallelism turns a scale factor into a parallelism: rounded up,
// within the vertex limits (vertex.min/max-parallelism, widened to include
// the current parallelism as upstream does, so a job started outside them is
// never forced to jump), within its max parallelism, then aligned to its key
// groups or source partitions. It returns the parallelism and, when the
// limits or the alignment changed it, why.
func newParallelism(current, maxParallelism, alignTo int, factor float64, o options.Options) (int, string) {
	lower := min(current, o.VertexMinParallelism)
	upper := max(current, o.VertexMaxParallelism)
	if maxParallelism > 0 {
		upper = min(upper, maxParallelism)
	}
	lower = min(lower, upper)
	want := int(math.Min(math.Ceil(factor*float64(current)), math.MaxInt32))
	p := min(max(want, lower), upper)
	note := ""
	if p != want {
		note = "limited by the vertex's parallelism bounds"
	}
	if alignTo <= 0 || p == current {
		return p, note
	}
	aligned := align(p, current, alignTo, min(alignTo, upper), lower, o.KeyGroupAdjustMode)
	if aligned != p {
		if aligned == current {
			note = "no aligned parallelism in the scaling direction"
		} else {
			note = "aligned to key groups or partitions"
		}
	}
	return aligned, note
}

// align moves p to a parallelism that spreads n key groups (or partitions)
// well, as upstream's JobVertexScaler.scale: first the smallest value from p
// upward that divides n (EVENLY_SPREAD) or that lowers the largest share per
// subtask (MAXIMIZE_UTILISATION), not crossing the current parallelism on a
// scale-down; failing that, the smallest value below p with the same largest
// share. A result that would reverse the scaling direction keeps current.
func align(p, current, n, upper, lower int, mode string) int {
	up := p > current
	searchTo := upper
	if !up {
		searchTo = min(current, upper)
	}
	for q := p; q <= searchTo; q++ {
		if n%q == 0 || (mode == options.MaximizeUtilisation && n/q < n/p) {
			return q
		}
	}
	q := p
	for ; q > 0; q-- {
		if n/q > n/p {
			if n%q != 0 {
				q++
			}
			break
		}
	}
	q = max(q, lower)
	if (up && q <= current) || (!up && q >= current) {
		return current
	}
	return q
}

// observedScalingCoefficient estimates how far the vertex falls short of
// linear scaling from its past scalings (observed-scalability.*): the
// least-squares slope of capacity over parallelism relative to the capacity
// per subtask at the smallest parallelism seen, clamped to
// [coefficient-min, 1]. 1 (linear) without enough observations, as upstream.
func observedScalingCoefficient(history []VertexChange, o options.Options) float64 {
	if !o.ObservedScalabilityEnabled || len(history) < max(o.ObservedScalabilityMinObs, 1) {
		return 1
	}
	base, baseP := math.NaN(), 0
	for n := len(history) - 1; n >= 0; n-- {
		c := history[n]
		if baseP == 0 || c.From < baseP {
			base, baseP = c.TrueProcessingRate/float64(c.From), c.From
		}
	}
	if !(base > 0) || math.IsInf(base, 0) {
		return 1
	}
	var sum, squares float64
	for _, c := range history {
		if math.IsNaN(c.TrueProcessingRate) || math.IsInf(c.TrueProcessingRate, 0) {
			return 1
		}
		p := float64(c.From)
		sum += p * c.TrueProcessingRate
		squares += p * p
	}
	if squares == 0 {
		return 1
	}
	alpha := sum / (squares * base)
	alpha = math.Max(o.ObservedScalabilityCoeffMin, math.Min(1, alpha))
	return math.Ceil(alpha*100) / 100 // two decimals, rounded up, as upstream
}
