package cache

import (
	"sync"

	"k8s.io/client-go/tools/cache"
)

// handlerMux is the one event handler pkg/cache registers on an informer,
// passing every notification to the controllers' handlers in the order they
// were added. Each handler registered on a shared informer is a listener of
// its own: two goroutines and a notification buffer (1,024 slots at first,
// grown to whatever a burst left unprocessed, never shrunk), per namespace
// watched. The flink.apache.org informers have three or four handlers each
// (every controller and the lifecycle metrics), so with ten namespaces one
// listener instead of each saves 80 listeners, about 2.5 MiB of buffers and
// stacks (make bench-scale). The controllers' handlers only queue keys, so
// running them one after the other on one goroutine delays none of them.
type handlerMux struct {
	mu       sync.RWMutex
	handlers []cache.ResourceEventHandler
}

func (m *handlerMux) add(h cache.ResourceEventHandler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers = append(m.handlers, h)
}

func (m *handlerMux) each(f func(cache.ResourceEventHandler)) {
	m.mu.RLock()
	hs := m.handlers
	m.mu.RUnlock()
	for _, h := range hs {
		f(h)
	}
}

func (m *handlerMux) OnAdd(obj any, isInInitialList bool) {
	m.each(func(h cache.ResourceEventHandler) { h.OnAdd(obj, isInInitialList) })
}

func (m *handlerMux) OnUpdate(oldObj, newObj any) {
	m.each(func(h cache.ResourceEventHandler) { h.OnUpdate(oldObj, newObj) })
}

func (m *handlerMux) OnDelete(obj any) {
	m.each(func(h cache.ResourceEventHandler) { h.OnDelete(obj) })
}
