package benchscale

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procStats are a process's memory and CPU figures from /proc.
type procStats struct {
	RSS, HWM int64   // bytes: VmRSS, VmHWM (peak RSS)
	Heap     int64   // bytes: the Go heap in use (from /metrics; 0 if unknown)
	PeakHeap int64   // bytes: the largest Heap sampled
	CPU      float64 // seconds: utime + stime
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func readProc(pid int) (procStats, error) {
	var st procStats
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		for prefix, dst := range map[string]*int64{"VmRSS:": &st.RSS, "VmHWM:": &st.HWM} {
			if v, ok := strings.CutPrefix(s.Text(), prefix); ok {
				f := strings.Fields(v)
				if len(f) == 2 && f[1] == "kB" {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					*dst = kb * 1024
				}
			}
		}
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	// pid (comm) state ppid ...: utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return st, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return st, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	sy, _ := strconv.ParseFloat(f[12], 64)
	st.CPU = (ut + sy) / clockTicks
	return st, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
