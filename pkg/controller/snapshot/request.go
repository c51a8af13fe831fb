package snapshot

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// kind is what a snapshot takes, spelled as metrics labels and messages
// spell it.
type kind string

const (
	savepoint  kind = "savepoint"
	checkpoint kind = "checkpoint"
)

// kindOf is the snapshot's kind: a savepoint when spec.savepoint is set.
func kindOf(s *v1beta1.FlinkStateSnapshot) kind {
	if snapshotrules.IsSavepoint(s) {
		return savepoint
	}
	return checkpoint
}

// request is what a snapshot asks Flink for. It is decided here only, from
// the spec and the job's configuration, so that the trigger, the same
// trigger sent again when Flink forgot it, the adoption of a forgotten
// attempt from the checkpoint history and the messages naming where the
// files are all agree.
type request struct {
	kind kind
	// dir is where a savepoint goes: spec.savepoint.path, else the job's
	// configured savepoint directory; "" when neither names one (or the
	// job's configuration is unknown). Always "" for a checkpoint.
	dir string
	// format is the savepoint's format: the spec's, else CANONICAL, which
	// is Flink's default; UNKNOWN, which Flink does not accept, counts as
	// unset.
	format flink.SavepointFormatType
}

// requestOf decides s's request; cfg is its job's configuration (nil when
// it is unknown).
func requestOf(s *v1beta1.FlinkStateSnapshot, cfg config.Config) request {
	r := request{kind: kindOf(s)}
	if r.kind != savepoint {
		return r
	}
	if r.dir = s.Spec.Savepoint.Path; r.dir == "" {
		r.dir, _ = config.SavepointDir(cfg)
	}
	r.format = flink.SavepointFormatType(s.Spec.Savepoint.FormatType)
	if r.format == "" || r.format == flink.SavepointFormatType(v1beta1.SavepointFormatUnknown) {
		r.format = flink.SavepointFormatCanonical
	}
	return r
}
