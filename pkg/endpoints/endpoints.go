// Package endpoints says where a Flink cluster's JobManager REST API is
// reached. The controllers that talk to Flink (snapshots, deployments, session
// jobs) share one Resolver, chosen once by the operator (--flink-endpoint):
// the <name>-rest Service's DNS name when the operator runs inside the
// cluster, or a ready JobManager pod's IP when it runs outside but can route
// to pods.
//
// Nothing here calls the API server: the pod-ip resolver reads pods through
// a lister the caller passes in (an informer cache).
package endpoints

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Resolver returns the REST base URL of a Flink cluster's JobManager, given
// the cluster and its rest.port.
type Resolver func(cluster *v1beta1.FlinkDeployment, restPort int) (string, error)

// Service is the in-cluster address: the <name>-rest Service.
func Service(cluster *v1beta1.FlinkDeployment, restPort int) (string, error) {
	return fmt.Sprintf("http://%s-rest.%s.svc:%d", cluster.Name, cluster.Namespace, restPort), nil
}

// PodLister lists the pods of a namespace matching a selector, from a cache.
type PodLister func(namespace string, selector labels.Selector) ([]*corev1.Pod, error)

// PodIP resolves to the IP of a ready, not terminating JobManager pod
// (labels app=<name>, component=jobmanager), for an operator running outside
// the cluster that can route to pod IPs (the local cluster of `make run`,
// where pods are processes on loopback addresses).
func PodIP(list PodLister) Resolver {
	return func(cluster *v1beta1.FlinkDeployment, port int) (string, error) {
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
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
