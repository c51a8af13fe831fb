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
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Resolver returns the REST base URL of a Flink cluster's JobManager, given
// the cluster and its rest.port.
type Resolver func(cluster *v1beta1.FlinkDeployment, restPort int) (string, error)

// Service is the in-cluster address: the <name>-rest Service.
func Service(cluster *v1beta1.FlinkDeployment, restPort int) (string, error) {
	return fmt.Sprintf("http://%s-rest.%s.svc:%d", cluster.Name, cluster.Namespace, restPort), nil
}

// PodsByCluster names the pod informers' index by Flink cluster: namespace
// and app label. A cluster's pods are then found without matching a selector
// against every pod of the namespace, which a profile of 1,000 running jobs
// (make bench-scale) showed in every FlinkDeployment sync and pod-ip lookup.
const PodsByCluster = "flinkops.cluster"

// ClusterIndex is the PodsByCluster index function.
func ClusterIndex(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Labels["app"] == "" {
		return nil, nil
	}
	return []string{p.Namespace + "/" + p.Labels["app"]}, nil
}

// ClusterPods returns the pods of the Flink cluster app in namespace that
// match sel (nil: all): from the PodsByCluster index when indexer has it,
// else by a scan of the namespace.
func ClusterPods(indexer cache.Indexer, namespace, app string, sel labels.Selector) ([]*corev1.Pod, error) {
	if sel == nil {
		sel = labels.Everything()
	}
	var out []*corev1.Pod
	if _, ok := indexer.GetIndexers()[PodsByCluster]; ok {
		objs, err := indexer.ByIndex(PodsByCluster, namespace+"/"+app)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok && sel.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	withApp := labels.SelectorFromSet(labels.Set{"app": app})
	err := cache.ListAllByNamespace(indexer, namespace, withApp, func(o any) {
		if p, ok := o.(*corev1.Pod); ok && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	})
	return out, err
}

// PodLister lists the pods of the Flink cluster app in namespace matching a
// selector, from a cache (ClusterPods).
type PodLister func(namespace, app string, selector labels.Selector) ([]*corev1.Pod, error)

// PodIP resolves to the IP of a ready, not terminating JobManager pod
// (labels app=<name>, component=jobmanager), for an operator running outside
// the cluster that can route to pod IPs (the local cluster of `make run`,
// where pods are processes on loopback addresses).
func PodIP(list PodLister) Resolver {
	return func(cluster *v1beta1.FlinkDeployment, port int) (string, error) {
		pods, err := list(cluster.Namespace, cluster.Name, labels.SelectorFromSet(labels.Set{"app": cluster.Name, "component": "jobmanager"}))
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
