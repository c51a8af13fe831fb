package snapshot

import "testing"

// The versions a process wrote over mark the cache behind until it shows
// another; without resource versions nothing is recorded.
func TestCacheBehindOwnWrites(t *testing.T) {
	c := &Controller{}
	c.wroteOver("ns/a", "", "")
	c.wroteOver("ns/a", "5", "5")
	if c.cacheBehind("ns/a", "") || c.cacheBehind("ns/a", "5") {
		t.Fatal("behind without a recorded write")
	}
	c.wroteOver("ns/a", "5", "6") // labels
	c.wroteOver("ns/a", "6", "7") // then status
	for _, rv := range []string{"5", "6"} {
		if !c.cacheBehind("ns/a", rv) {
			t.Errorf("cache at %s not behind the writes up to 7", rv)
		}
	}
	if c.cacheBehind("ns/b", "5") {
		t.Error("another snapshot behind")
	}
	if c.cacheBehind("ns/a", "7") {
		t.Error("cache at the last write still behind")
	}
	if c.cacheBehind("ns/a", "5") {
		t.Error("record kept after the cache caught up")
	}
}
