package deployment

import (
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
)

// TestReloadedExceptionOptionsShapeNextError: status.error is rendered with
// the kubernetes.operator.exception.* options of the operator
// configuration in use at the sync, so a reloaded config file changes the
// next error's shape without a restart of the operator (the same
// controller, whose start-up configuration had the defaults).
func TestReloadedExceptionOptionsShapeNextError(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	d.Spec.Image = ""
	f.Create(d)
	f.Step("job")
	first := f.Get("job").Status.Error
	msg := jobengine.ErrorMessage(first)
	if len(msg) <= 20 {
		t.Fatalf("status.error %q: want a message longer than 20 characters", first)
	}
	ctrl := f.ctrl

	reloaded := f.Config.Clone()
	reloaded[config.KeyExceptionFieldMaxLength] = "20"
	reloaded[config.KeyExceptionLabelMapper] = `spec\.image:missing-image`
	f.live.Store(reloaded)
	f.Step("job")
	got := f.Get("job").Status.Error
	e, ok := jobengine.ParseError(got)
	if !ok {
		t.Fatalf("status.error %q is not an exception", got)
	}
	if e.Message != msg[:20] {
		t.Errorf("message after the reload %q, want it cut to field.max.length 20: %q", e.Message, msg[:20])
	}
	if labels, _ := e.AdditionalMetadata["labels"].([]any); len(labels) != 1 || labels[0] != "missing-image" {
		t.Errorf("labels after the reload %v, want [missing-image] (label.mapper); status.error %s", e.AdditionalMetadata["labels"], got)
	}
	if f.ctrl != ctrl {
		t.Fatal("the controller was rebuilt")
	}

	f.live.Store(f.Config)
	f.Step("job")
	if got := f.Get("job").Status.Error; got != first {
		t.Errorf("status.error back on the start-up options\n got %s\nwant %s", got, first)
	}
}
