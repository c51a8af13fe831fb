package benchscale

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/flinkops/flink-operator/cmd/fake-jobmanager/synthload"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// fakeNode stands in for the node agent in the running scenario: it binds
// the JobManager and TaskManager pods of the load, serves every JobManager
// as an in-process fake (pkg/flink/fakejm) on its own loopback address and
// port 8081 (all of 127/8 reaches lo), with the application's job
// ($internal.pipeline.job-id of its configuration) RUNNING, and reports the
// pods Running and Ready, as the operator's --flink-endpoint=pod-ip and the
// Deployment controller need. One process for all JobManagers: 1,000 fit,
// where 1,000 fake-jobmanager processes (~8 MiB each) plus their
// TaskManager processes would crowd this machine. Pod IPs come from
// 127.210.0.0/16, outside the node agents' 127.100-127.199. A JobManager
// pod whose container has $FAKE_JOBMANAGER_LOAD serves that synthetic load
// (cmd/fake-jobmanager/synthload), as cmd/fake-jobmanager does.
type fakeNode struct {
	ctx          context.Context
	kube         kubernetes.Interface
	pods         corelisters.PodLister
	queue        workqueue.TypedRateLimitingInterface[string]
	savepointDir string

	mu      sync.Mutex
	running map[string]*fakePod // ns/name
	nextIP  int
	wg      sync.WaitGroup
}

type fakePod struct {
	uid  types.UID
	ip   string
	srv  *http.Server
	jm   *fakejm.Server
	jobs int
	// load drives the synthetic load the pod's $FAKE_JOBMANAGER_LOAD asks
	// for (nil: none), until stopLoad.
	load     *synthload.Driver
	stopLoad context.CancelFunc
}

const fakeNodeName = "bench-node"

var jobIDRE = regexp.MustCompile(`(?m)^\s*"?\$internal\.pipeline\.job-id"?\s*:\s*"?([0-9a-f]{32})`)

// startFakeNode runs the fake node until ctx ends (then its servers close).
func startFakeNode(ctx context.Context, kube kubernetes.Interface, savepointDir string, workers int) *fakeNode {
	f := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "component in (jobmanager,taskmanager)" }))
	inf := f.Core().V1().Pods()
	n := &fakeNode{
		ctx: ctx, kube: kube, pods: inf.Lister(), savepointDir: savepointDir,
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		running: map[string]*fakePod{},
	}
	enqueue := func(obj any) {
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			n.queue.Add(k)
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	for range workers {
		n.wg.Go(func() {
			for {
				k, quit := n.queue.Get()
				if quit {
					return
				}
				if err := n.sync(k); err != nil {
					n.queue.AddRateLimited(k)
				} else {
					n.queue.Forget(k)
				}
				n.queue.Done(k)
			}
		})
	}
	go func() {
		<-ctx.Done()
		n.queue.ShutDown()
		n.mu.Lock()
		defer n.mu.Unlock()
		for k, p := range n.running {
			p.stop()
			delete(n.running, k)
		}
	}()
	return n
}

// jobManagers is the number of fake JobManagers serving.
func (n *fakeNode) jobManagers() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, p := range n.running {
		if p.jm != nil {
			c++
		}
	}
	return c
}

func (p *fakePod) stop() {
	if p.stopLoad != nil {
		p.stopLoad()
	}
	if p.srv != nil {
		_ = p.srv.Close()
	}
}

func (n *fakeNode) sync(key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := n.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		n.forget(key, "")
		return nil
	}
	if err != nil {
		return err
	}
	if !strings.HasPrefix(pod.Labels["app"], deploymentPrefix) {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		n.forget(key, "")
		err := n.kube.CoreV1().Pods(ns).Delete(n.ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	if pod.Spec.NodeName == "" {
		err := n.kube.CoreV1().Pods(ns).Bind(n.ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: fakeNodeName},
		}, metav1.CreateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err // the update event brings the pod back
	}
	n.mu.Lock()
	p := n.running[key]
	n.mu.Unlock()
	if p == nil || p.uid != pod.UID {
		n.forget(key, "")
		if p, err = n.run(pod); err != nil {
			return err
		}
		n.mu.Lock()
		n.running[key] = p
		n.mu.Unlock()
	}
	if pod.Status.PodIP == p.ip && ready(pod) {
		return nil
	}
	return n.reportReady(pod, p.ip)
}

func (n *fakeNode) forget(key string, _ types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := n.running[key]; p != nil {
		p.stop()
		delete(n.running, key)
	}
}

// run starts a pod: a JobManager serves a fake on <ip>:8081.
func (n *fakeNode) run(pod *corev1.Pod) (*fakePod, error) {
	n.mu.Lock()
	i := n.nextIP
	n.nextIP++
	n.mu.Unlock()
	p := &fakePod{uid: pod.UID, ip: fmt.Sprintf("127.210.%d.%d", i/250, i%250+1)}
	if pod.Labels["component"] != "jobmanager" {
		return p, nil
	}
	jobID, err := n.jobID(pod)
	if err != nil {
		return nil, err
	}
	jm := fakejm.NewUnstarted(fakejm.Options{Version: flink.V1_20, SavepointDir: n.savepointDir, MaxRequestLog: 100})
	if jobID != "" {
		if _, err := jm.AddJob(fakejm.JobSpec{ID: jobID}); err != nil {
			return nil, err
		}
		p.jobs = 1
	}
	if spec, ok, err := podLoad(pod); err != nil {
		return nil, err
	} else if ok {
		// As cmd/fake-jobmanager does with the variable: the job's graph
		// and metrics follow the load, and resource-requirements PUTs
		// rescale it (Flink's adaptive scheduler).
		p.load = synthload.New(jm, spec)
		if err := p.load.Step(time.Now()); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", p.ip+":8081")
	if err != nil {
		return nil, err
	}
	if p.load != nil {
		ctx, cancel := context.WithCancel(n.ctx)
		p.stopLoad = cancel
		go p.load.Run(ctx, loadTick)
	}
	p.jm, p.srv = jm, &http.Server{Handler: jm, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// loadTick is how often a synthetic load updates its job's metrics.
const loadTick = 2 * time.Second

// podLoad is the synthetic load of the pod's $FAKE_JOBMANAGER_LOAD (the
// FlinkDeployment's JobManager pod template sets it).
func podLoad(pod *corev1.Pod) (synthload.Spec, bool, error) {
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == synthload.EnvVar && e.Value != "" {
				spec, err := synthload.Parse(e.Value)
				return spec, err == nil, err
			}
		}
	}
	return synthload.Spec{}, false, nil
}

// parallelism counts the jobs of the synthetic loads by their vertices'
// parallelism as the fake JobManagers run them ("1-1-3").
func (n *fakeNode) parallelism() map[string]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]int{}
	for _, p := range n.running {
		if p.load == nil || p.jm == nil {
			continue
		}
		for _, id := range p.jm.JobIDs() {
			ps := p.load.Parallelism(id)
			if ps == nil {
				continue
			}
			key := ""
			for i, x := range ps {
				if i > 0 {
					key += "-"
				}
				key += strconv.Itoa(x)
			}
			out[key]++
		}
	}
	return out
}

// jobID is $internal.pipeline.job-id from the pod's ConfigMap volumes.
func (n *fakeNode) jobID(pod *corev1.Pod) (string, error) {
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm, err := n.kube.CoreV1().ConfigMaps(pod.Namespace).Get(n.ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		for _, data := range cm.Data {
			if m := jobIDRE.FindStringSubmatch(data); m != nil {
				return m[1], nil
			}
		}
	}
	return "", errors.New("no $internal.pipeline.job-id in the pod's configuration")
}

func ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// reportReady writes the pod's status: Running and Ready on ip.
func (n *fakeNode) reportReady(pod *corev1.Pod, ip string) error {
	now := metav1.Now()
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	pod.Status.HostIP, pod.Status.HostIPs = "127.0.0.1", []corev1.HostIP{{IP: "127.0.0.1"}}
	if pod.Status.StartTime == nil {
		pod.Status.StartTime = &now
	}
	pod.Status.Conditions = nil
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: new(true),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			ContainerID: "bench://" + string(pod.UID) + "/" + c.Name,
		})
	}
	_, err := n.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(n.ctx, pod, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
