package nodeagent

import (
	"context"
	"runtime"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// HostIP is the node's address (and every pod's status.hostIP).
	HostIP = "127.0.0.1"
	// leaseDuration is the node Lease's duration; it is renewed every
	// leaseRenew, and the Ready condition's heartbeat every statusRenew, as
	// the kubelet does (10s lease renewal, status at least every 5 min; here
	// more often so that a stopped agent is noticed quickly).
	leaseDuration = 40 * time.Second
	leaseRenew    = 5 * time.Second
	statusRenew   = 10 * time.Second
	// NodeLeaseNamespace holds node heartbeat Leases.
	NodeLeaseNamespace = "kube-node-lease"
)

// nodeObject is the Node the agent registers: schedulable, no taints,
// labelled like a kubelet's node.
func (a *Agent) nodeObject() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.cfg.NodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": a.cfg.NodeName,
				"kubernetes.io/os":       runtime.GOOS,
				"kubernetes.io/arch":     runtime.GOARCH,
				"flinkops.io/node-agent": "true",
			},
		},
	}
}

// nodeStatus is the node's status with a fresh Ready heartbeat.
func (a *Agent) nodeStatus(ready bool, since metav1.Time) corev1.NodeStatus {
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, ok bool, reason, msg string) corev1.NodeCondition {
		st := corev1.ConditionFalse
		if ok {
			st = corev1.ConditionTrue
		}
		return corev1.NodeCondition{Type: t, Status: st, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: since}
	}
	readyCond := cond(corev1.NodeReady, true, "LocalNodeAgentReady", "the local node agent runs pods as processes")
	if !ready {
		readyCond = cond(corev1.NodeReady, false, "LocalNodeAgentStopped", "the local node agent stopped")
	}
	return corev1.NodeStatus{
		Capacity:    a.cfg.Capacity,
		Allocatable: a.cfg.Capacity,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			readyCond,
			cond(corev1.NodeMemoryPressure, false, "KubeletHasSufficientMemory", ""),
			cond(corev1.NodeDiskPressure, false, "KubeletHasNoDiskPressure", ""),
			cond(corev1.NodePIDPressure, false, "KubeletHasSufficientPID", ""),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: HostIP},
			{Type: corev1.NodeHostName, Address: a.cfg.NodeName},
		},
		// Where the API server finds the kubelet API (pods/log); 0
		// without one.
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: a.kubeletPort}},
		NodeInfo: corev1.NodeSystemInfo{
			OperatingSystem:         runtime.GOOS,
			Architecture:            runtime.GOARCH,
			KubeletVersion:          "v1.37.2-flinkops-node-agent",
			ContainerRuntimeVersion: "local-process://1",
		},
	}
}

// registerNode creates (or takes over) the Node, marks it Ready and creates
// its Lease.
func (a *Agent) registerNode(ctx context.Context) error {
	nodes := a.client.CoreV1().Nodes()
	node, err := nodes.Create(ctx, a.nodeObject(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	a.nodeUID = node.UID
	a.readySince = metav1.Now()
	node.Status = a.nodeStatus(true, a.readySince)
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return a.renewLease(ctx)
}

func (a *Agent) renewLease(ctx context.Context) error {
	leases := a.client.CoordinationV1().Leases(NodeLeaseNamespace)
	now := metav1.NowMicro()
	lease, err := leases.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:      a.cfg.NodeName,
				Namespace: NodeLeaseNamespace,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: a.cfg.NodeName, UID: a.nodeUID,
				}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(a.cfg.NodeName),
				LeaseDurationSeconds: ptr.To(int32(leaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.HolderIdentity = ptr.To(a.cfg.NodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(leaseDuration / time.Second))
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// heartbeat renews the Lease and the Ready condition so that the node
// lifecycle controller never marks the node NotReady.
func (a *Agent) heartbeat(ctx context.Context) {
	lease := time.NewTicker(leaseRenew)
	defer lease.Stop()
	status := time.NewTicker(statusRenew)
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			if err := a.renewLease(ctx); err != nil && ctx.Err() == nil {
				a.logf("node lease: %v", err)
			}
		case <-status.C:
			if err := a.updateNodeStatus(ctx, true); err != nil && ctx.Err() == nil {
				a.logf("node status: %v", err)
			}
		}
	}
}

func (a *Agent) updateNodeStatus(ctx context.Context, ready bool) error {
	nodes := a.client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Deleted behind our back: register again.
		return a.registerNode(ctx)
	}
	if err != nil {
		return err
	}
	node.Status = a.nodeStatus(ready, a.readySince)
	_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// markNodeNotReady tells the API server, best effort, that the node's pods
// no longer run (when the agent stops while the control plane is up).
func (a *Agent) markNodeNotReady() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a.readySince = metav1.Now()
	_ = a.updateNodeStatus(ctx, false)
}
