package operator

import (
	"context"
	"reflect"
	"testing"

	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/snapshot"
	flinkfake "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
)

// faultEnvName is the variable the faultinject build reads (FaultEnv there);
// spelled out here because the default build has no such constant.
const faultEnvName = "FLINKOP_TEST_FAULT"

// afterIntentInstalled builds the controllers as the operator does, with
// faultEnvName set to value, and reports whether the snapshot controller got
// an AfterIntentWritten hook (or newControllers' error).
func afterIntentInstalled(t *testing.T, value string) (bool, error) {
	t.Helper()
	t.Setenv(faultEnvName, value)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube, flink := kubefake.NewSimpleClientset(), flinkfake.NewSimpleClientset()
	opts := &runState{Options: Options{Config: config.Defaults(), Controllers: []string{snapshot.QueueName}}}
	c, err := newControllers(ctx, clients{kube: kube, flink: flink, events: kube.CoreV1()}, NewInformers(kube, flink, nil, 0), opts)
	if err != nil {
		return false, err
	}
	defer c.shutdown()
	if c.snapshots == nil {
		t.Fatal("no snapshot controller")
	}
	// The hook is kept unexported in the controller; reflection reads
	// whether it is set (reading, unlike calling, is allowed).
	hook := reflect.ValueOf(c.snapshots).Elem().FieldByName("afterIntent")
	if !hook.IsValid() || hook.Kind() != reflect.Func {
		t.Fatalf("snapshot.Controller has no func field afterIntent (where does it keep Options.AfterIntentWritten now?)")
	}
	return !hook.IsNil(), nil
}
