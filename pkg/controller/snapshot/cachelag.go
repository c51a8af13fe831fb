package snapshot

import (
	"slices"
	"sync"
	"time"
)

// A sync reads the informer cache, which lags the API server: under load
// the echo of a write can arrive after the snapshot's next sync (a status
// poll one second after the trigger, say). Acting on the old object would
// compute again what was just written, send a REST call for nothing and
// end in a conflict, a wasted write. So the controller remembers the
// resource versions its own writes replaced, and a sync that finds one of
// them in the cache waits for the echo, whose event syncs the snapshot
// again (the expectations of the Kubernetes controllers, by resource
// version).

// cacheLagRecheck syncs a snapshot whose cache is behind again even if the
// echo's event never comes (a relist that coalesced it, say).
const cacheLagRecheck = time.Second

type writtenVersions struct {
	mu  sync.Mutex
	rvs []string
}

// wroteOver records that this process replaced resource version rv of key
// with written. Without resource versions (a fake clientset) there is
// nothing to tell versions apart by, and nothing is recorded.
func (c *Controller) wroteOver(key, rv, written string) {
	if rv == "" || rv == written {
		return
	}
	v, _ := c.writtenOver.LoadOrStore(key, &writtenVersions{})
	w := v.(*writtenVersions)
	w.mu.Lock()
	w.rvs = append(w.rvs, rv)
	w.mu.Unlock()
}

// cacheBehind reports whether the cached resource version rv of key is one
// this process already wrote over; once the cache shows another, the
// record is dropped.
func (c *Controller) cacheBehind(key, rv string) bool {
	v, ok := c.writtenOver.Load(key)
	if !ok {
		return false
	}
	w := v.(*writtenVersions)
	w.mu.Lock()
	behind := slices.Contains(w.rvs, rv)
	w.mu.Unlock()
	if !behind {
		c.writtenOver.CompareAndDelete(key, v)
	}
	return behind
}
