package sessionjob

import "time"

// crash is what a fault point panics with, as a kill -9 would stop the
// process there.
type crash struct{}

// stepCrashing is step that survives a crash: the panic ends the sync and a
// new controller (fresh memory, same API state) takes over.
func (f *fixture) stepCrashing(name string) (crashed bool) {
	f.t.Helper()
	d, err := func() (d time.Duration, err error) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(crash); !ok {
					panic(r)
				}
				crashed = true
			}
		}()
		return f.sync(name)
	}()
	if crashed {
		f.refresh()
		f.restart()
		f.clock.Step(time.Second)
		return true
	}
	if err != nil {
		f.t.Logf("sync error (retried): %v", err)
	}
	f.clock.Step(max(min(d, 30*time.Second), time.Second))
	return false
}
