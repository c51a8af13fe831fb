package operator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/snapshot"
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
// pods from the core informers (labels app=<name>, component=jobmanager).
func endpointResolver(mode string, inf *Informers) (snapshot.EndpointResolver, error) {
	switch mode {
	case "", EndpointService:
		return snapshot.ServiceEndpoint, nil
	case EndpointPodIP:
		listers := map[string]func(ns string, sel labels.Selector) ([]*corev1.Pod, error){}
		for ns, f := range inf.Kube {
			lister := f.Core().V1().Pods().Lister()
			listers[ns] = func(namespace string, sel labels.Selector) ([]*corev1.Pod, error) {
				return lister.Pods(namespace).List(sel)
			}
		}
		return func(cluster *v1beta1.FlinkDeployment, port int) (string, error) {
			list, ok := listers[""]
			if !ok {
				list, ok = listers[cluster.Namespace]
			}
			if !ok {
				return "", fmt.Errorf("namespace %s is not watched", cluster.Namespace)
			}
			pods, err := list(cluster.Namespace, labels.SelectorFromSet(labels.Set{"app": cluster.Name, "component": "jobmanager"}))
			if err != nil {
				return "", err
			}
			for _, p := range pods {
				if p.Status.PodIP != "" && p.DeletionTimestamp == nil && podReady(p) {
					return fmt.Sprintf("http://%s:%d", p.Status.PodIP, port), nil
				}
			}
			return "", fmt.Errorf("no ready JobManager pod of FlinkDeployment %s/%s", cluster.Namespace, cluster.Name)
		}, nil
	}
	return nil, fmt.Errorf("unknown --flink-endpoint %q: want %q or %q", mode, EndpointService, EndpointPodIP)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
