//go:build !faultinject

package operator

import (
	"context"

	"github.com/flinkops/flink-operator/pkg/controller/snapshot"
)

// installFaults does nothing: test fault points exist only in the operator
// built with -tags faultinject (faults_faultinject.go), never in the one
// that is shipped, whatever its environment.
func installFaults(context.Context, *snapshot.Options, *func(key, point string)) error { return nil }
