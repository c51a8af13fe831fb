package operator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/flinkops/flink-operator/pkg/endpoints"
)

// Ways to reach a Flink cluster's REST endpoint (--flink-endpoint).
const (
	// EndpointService uses the <name>-rest Service's DNS name: the operator
	// runs inside the cluster.
	EndpointService = "service"
	// EndpointPodIP uses the IP of a ready JobManager pod: for an operator
	// running outside the cluster that can route to pod IPs (the local
	// cluster of `make run`, where pods are processes on loopback addresses).
	EndpointPodIP = "pod-ip"
)

// endpointResolver returns the resolver for mode; pod-ip reads JobManager
// pods from the owned-object informers (the pods carry the
// type=flink-standalone-kubernetes or flink-native-kubernetes label those
// informers select on).
func endpointResolver(mode string, inf *Informers) (endpoints.Resolver, error) {
	switch mode {
	case "", EndpointService:
		return endpoints.Service, nil
	case EndpointPodIP:
		indexers := map[string]cache.Indexer{}
		for ns, f := range inf.Kube {
			indexers[ns] = f.Core().V1().Pods().Informer().GetIndexer()
		}
		return endpoints.PodIP(func(namespace, app string, sel labels.Selector) ([]*corev1.Pod, error) {
			indexer, ok := indexers[""]
			if !ok {
				indexer, ok = indexers[namespace]
			}
			if !ok {
				return nil, fmt.Errorf("namespace %s is not watched", namespace)
			}
			return endpoints.ClusterPods(indexer, namespace, app, sel)
		}), nil
	}
	return nil, fmt.Errorf("unknown --flink-endpoint %q: want %q or %q", mode, EndpointService, EndpointPodIP)
}
