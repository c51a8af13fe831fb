package controllerctx

import (
	"sync"
	"testing"

	"github.com/flinkops/flink-operator/pkg/config"
)

// CurrentConfig reads the live configuration when the operator set one, so
// a swap is seen by the next read; without one it is Config, as before.
func TestCurrentConfig(t *testing.T) {
	start := config.Config{config.KeySavepointHistoryMaxCount: "3"}
	for _, tc := range []struct {
		name string
		live *LiveConfig
		swap config.Config
		want string
	}{
		{"no live config", nil, nil, "3"},
		{"live config, unchanged", NewLiveConfig(start), nil, "3"},
		{"live config, swapped", NewLiveConfig(start), config.Config{config.KeySavepointHistoryMaxCount: "7"}, "7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Context{Config: start, Live: tc.live}.WithDefaults()
			if tc.swap != nil {
				tc.live.Store(tc.swap)
			}
			if got := c.CurrentConfig().String(config.KeySavepointHistoryMaxCount); got != tc.want {
				t.Errorf("CurrentConfig max.count %q, want %q", got, tc.want)
			}
			if got := c.Config.String(config.KeySavepointHistoryMaxCount); got != "3" {
				t.Errorf("Config (start-up) max.count %q, want 3", got)
			}
		})
	}
}

// Readers and a writer at once (run with -race): a reader gets one whole
// snapshot or the other.
func TestLiveConfigConcurrent(t *testing.T) {
	a, b := config.Config{"k": "a", "j": "a"}, config.Config{"k": "b", "j": "b"}
	l := NewLiveConfig(a)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				c := l.Load()
				if c["k"] != c["j"] {
					t.Errorf("torn snapshot %v", c)
					return
				}
			}
		})
	}
	for i := range 1000 {
		if i%2 == 0 {
			l.Store(b)
		} else {
			l.Store(a)
		}
	}
	wg.Wait()
}
