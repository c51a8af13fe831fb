package operator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

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
		listers := map[string]func(ns string, sel labels.Selector) ([]*corev1.Pod, error){}
		for ns, f := range inf.Kube {
			lister := f.Core().V1().Pods().Lister()
			listers[ns] = func(namespace string, sel labels.Selector) ([]*corev1.Pod, error) {
				return lister.Pods(namespace).List(sel)
			}
		}
		return endpoints.PodIP(func(namespace string, sel labels.Selector) ([]*corev1.Pod, error) {
			list, ok := listers[""]
			if !ok {
				list, ok = listers[namespace]
			}
			if !ok {
				return nil, fmt.Errorf("namespace %s is not watched", namespace)
			}
			return list(namespace, sel)
		}), nil
	}
	return nil, fmt.Errorf("unknown --flink-endpoint %q: want %q or %q", mode, EndpointService, EndpointPodIP)
}
