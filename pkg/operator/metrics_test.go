package operator

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	flinkfake "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/metrics/metricstest"
)

// The controllers export the FlinkDeployment and FlinkSessionJob counts
// from the informers of every watched namespace when
// kubernetes.operator.resource.metrics.enabled is true at start, and
// nothing otherwise; shutting them down takes the series away.
func TestControllersExportResourceCountsWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(fmt.Sprintf("enabled %v", enabled), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			kube := kubefake.NewSimpleClientset()
			flink := flinkfake.NewSimpleClientset(
				&v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "d"},
					Status: v1beta1.FlinkDeploymentStatus{JobManagerDeploymentStatus: v1beta1.JobManagerReady}},
				&v1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "j"}},
			)
			inf := NewInformers(kube, flink, []string{"a", "b"}, 0)
			cfg := config.Defaults()
			cfg[config.KeyResourceMetricsEnabled] = fmt.Sprint(enabled)
			c, err := newControllers(ctx, clients{kube: kube, flink: flink, events: kube.CoreV1()}, inf, &runState{Options: Options{Config: cfg}})
			if err != nil {
				t.Fatal(err)
			}
			shutdown := sync.OnceFunc(c.shutdown)
			defer shutdown()
			for _, f := range inf.Flink {
				f.Start(ctx.Done())
				f.WaitForCacheSync(ctx.Done())
			}
			series := map[string]float64{
				`flink_operator_resources{kind="FlinkDeployment",namespace="a"}`:                           1,
				`flink_operator_jobmanager_deployments{namespace="a",status="READY"}`:                      1,
				`flink_operator_flink_versions{minor_version="MALFORMED",namespace="a",version="UNKNOWN"}`: 1,
				`flink_operator_resources{kind="FlinkSessionJob",namespace="b"}`:                           1,
			}
			samples, err := metricstest.Samples(metrics.Registry)
			if err != nil {
				t.Fatal(err)
			}
			for s, want := range series {
				got, ok := samples[s]
				if enabled && got != want {
					t.Errorf("%s = %v (exposed: %v), want %v", s, got, ok, want)
				}
				if !enabled && ok {
					t.Errorf("%s is exposed with resource.metrics.enabled false", s)
				}
			}
			shutdown()
			if samples, err = metricstest.Samples(metrics.Registry); err != nil {
				t.Fatal(err)
			}
			for s := range series {
				if _, ok := samples[s]; ok {
					t.Errorf("%s is still exposed after shutdown", s)
				}
			}
		})
	}
}

// client-go's request metrics are installed at start only when
// kubernetes.operator.kubernetes.client.metrics.enabled is true (the
// default).
func TestKubeClientMetricsFollowTheKey(t *testing.T) {
	for value, want := range map[string]bool{"": true, "true": true, "false": false} {
		cfg := config.Defaults()
		if value != "" {
			cfg[config.KeyKubernetesClientMetricsEnabled] = value
		}
		installed := false
		if err := kubeClientMetrics(cfg, func() { installed = true }); err != nil {
			t.Fatal(err)
		}
		if installed != want {
			t.Errorf("kubernetes.client.metrics.enabled %q: installed %v, want %v", value, installed, want)
		}
	}
}
