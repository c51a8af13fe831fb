package controllertest

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is a pointer to an API object, *v1beta1.FlinkDeployment say.
type Object interface {
	runtime.Object
	metav1.Object
}

// Resource is a typed client of one kind in one namespace, as
// Client.FlinkV1beta1().FlinkDeployments(namespace).
type Resource[O Object] interface {
	Create(context.Context, O, metav1.CreateOptions) (O, error)
	Get(context.Context, string, metav1.GetOptions) (O, error)
	Update(context.Context, O, metav1.UpdateOptions) (O, error)
}

// SyncFunc is a controller's Sync.
type SyncFunc func(ctx context.Context, key string) (time.Duration, error)

// Loop is a Fixture with the controller of one kind of object O and its
// sync loop. The hooks are set once, before the first Restart.
type Loop[O Object] struct {
	*Fixture

	// Build makes the controller under test from the Fixture (Client,
	// Kube, Caches, KubeFactories, Recorder, Config, Clock, FaultPoint)
	// and returns its Sync.
	Build func() (SyncFunc, error)
	// Resource is the kind's typed client in a namespace.
	Resource func(namespace string) Resource[O]
	// Status describes an object in failure messages.
	Status func(O) string
	// Ready is what Deploy waits for.
	Ready func(O) bool
	// Tick, when set, plays the world (Kubernetes, Flink processes) after
	// each sync of Step.
	Tick func()

	sync SyncFunc
}

// Restart builds a new controller (fresh memory, informers and caches,
// same API state), as after an operator crash.
func (l *Loop[O]) Restart() {
	l.T.Helper()
	l.newInformers()
	sync, err := l.Build()
	if err != nil {
		l.T.Fatal(err)
	}
	l.sync = sync
	l.Refresh()
}

// Sync runs one Sync of the named object against fresh caches.
func (l *Loop[O]) Sync(name string) (time.Duration, error) {
	l.T.Helper()
	l.Refresh()
	d, err := l.sync(l.Ctx, Namespace+"/"+name)
	l.Refresh()
	return d, err
}

// MustSync is Sync, failing the test on an error.
func (l *Loop[O]) MustSync(name string) time.Duration {
	l.T.Helper()
	d, err := l.Sync(name)
	if err != nil {
		l.T.Fatalf("sync %s: %v", name, err)
	}
	return d
}

// Step is one turn of the world: a sync, then the world reacts (Tick), then
// time passes (the requeue delay, 1 s to 30 s).
func (l *Loop[O]) Step(name string) {
	l.T.Helper()
	d := l.MustSync(name)
	l.tick()
	l.Clock.Step(requeue(d))
}

// StepCrashing is Step that survives a crash: a Crash panic ends the sync,
// and a new controller (fresh memory, same API state) takes over a second
// later. A sync error is logged, as the work queue would retry it.
func (l *Loop[O]) StepCrashing(name string) (crashed bool) {
	l.T.Helper()
	d, err := func() (d time.Duration, err error) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(Crash); !ok {
					panic(r)
				}
				crashed = true
			}
		}()
		return l.Sync(name)
	}()
	if crashed {
		l.Refresh()
		l.Restart()
		l.tick()
		l.Clock.Step(time.Second)
		return true
	}
	if err != nil {
		l.T.Logf("sync error (retried): %v", err)
	}
	l.tick()
	l.Clock.Step(requeue(d))
	return false
}

func (l *Loop[O]) tick() {
	if l.Tick != nil {
		l.Tick()
	}
}

func requeue(d time.Duration) time.Duration { return max(min(d, 30*time.Second), time.Second) }

// Until steps until cond holds, at most n times, and returns the object.
func (l *Loop[O]) Until(name string, n int, what string, cond func(O) bool) O {
	l.T.Helper()
	for range n {
		l.Step(name)
		if o := l.Get(name); cond(o) {
			return o
		}
	}
	l.T.Fatalf("%s: not reached after %d steps; status %s", what, n, l.Status(l.Get(name)))
	var none O
	return none
}

// Deploy creates an object and steps until it is Ready.
func (l *Loop[O]) Deploy(o O) O {
	l.T.Helper()
	l.Create(o)
	return l.Until(o.GetName(), 10, "deploy "+o.GetName(), l.Ready)
}

// Create creates an object (in Namespace unless it names another).
func (l *Loop[O]) Create(o O) {
	l.T.Helper()
	namespace := o.GetNamespace()
	if namespace == "" {
		namespace = Namespace
	}
	if _, err := l.Resource(namespace).Create(l.Ctx, o, metav1.CreateOptions{}); err != nil {
		l.T.Fatal(err)
	}
}

// Get reads an object of Namespace.
func (l *Loop[O]) Get(name string) O { l.T.Helper(); return l.GetIn(Namespace, name) }

// GetIn reads an object.
func (l *Loop[O]) GetIn(namespace, name string) O {
	l.T.Helper()
	o, err := l.Resource(namespace).Get(l.Ctx, name, metav1.GetOptions{})
	if err != nil {
		l.T.Fatal(err)
	}
	return o
}

// Edit changes an object as a user would: the generation moves.
func (l *Loop[O]) Edit(name string, change func(O)) {
	l.T.Helper()
	o := l.Get(name)
	change(o)
	o.SetGeneration(o.GetGeneration() + 1)
	if _, err := l.Resource(Namespace).Update(l.Ctx, o, metav1.UpdateOptions{}); err != nil {
		l.T.Fatal(err)
	}
}
