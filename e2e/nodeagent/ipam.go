package nodeagent

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Pod IPs are loopback addresses: on Linux all of 127.0.0.0/8 reaches lo
// without configuration, so every pod can bind its own address and every
// JobManager can listen on 8081.

// firstPodRange is the first /16 an agent tries; see claimPodRange.
var firstPodRange = netip.MustParsePrefix("127.100.0.0/16")

// claimPodRange picks the pod range of this agent: the first /16 from
// 127.100.0.0/16 up to 127.199.0.0/16 whose lock file (in lockDir) no other
// live agent holds, so that agents of concurrent test runs never hand out
// the same address. The lock (an flock, released by the kernel when the
// process dies) is held until release is called.
func claimPodRange(lockDir string) (prefix netip.Prefix, release func(), err error) {
	if err := os.MkdirAll(lockDir, 0o777); err != nil {
		return netip.Prefix{}, nil, err
	}
	a := firstPodRange.Addr().As4()
	for second := int(a[1]); second < 200; second++ {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(second), 0, 0}), 16)
		f, err := os.OpenFile(filepath.Join(lockDir, fmt.Sprintf("127.%d.lock", second)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return netip.Prefix{}, nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return netip.Prefix{}, nil, err
		}
		fmt.Fprintf(f, "%d\n", os.Getpid())
		return p, func() { f.Close() }, nil
	}
	return netip.Prefix{}, nil, errors.New("no free pod range in 127.100.0.0-127.199.255.255")
}

// ipam hands out pod IPs from a range, never one in use, and not one freed
// recently while others are free (so a name cached for a deleted pod does
// not point at a new one).
type ipam struct {
	mu     sync.Mutex
	prefix netip.Prefix
	next   netip.Addr
	used   map[netip.Addr]bool
}

func newIPAM(prefix netip.Prefix) *ipam {
	return &ipam{prefix: prefix.Masked(), next: prefix.Masked().Addr().Next(), used: map[netip.Addr]bool{}}
}

// claim reserves want if it is a free address of the range (a pod that
// already had it, when the agent restarts), else the next free one.
func (m *ipam) claim(want string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, err := netip.ParseAddr(want); err == nil && m.usable(a) && !m.used[a] {
		m.used[a] = true
		return a.String(), nil
	}
	start := m.next
	for a := start; ; {
		if m.usable(a) && !m.used[a] {
			m.used[a] = true
			m.next = a.Next()
			return a.String(), nil
		}
		if a = a.Next(); !m.prefix.Contains(a) {
			a = m.prefix.Addr()
		}
		if a == start {
			return "", fmt.Errorf("pod range %s exhausted", m.prefix)
		}
	}
}

// usable excludes the range's network address and x.x.x.0/x.x.x.255.
func (m *ipam) usable(a netip.Addr) bool {
	b := a.As4()
	return m.prefix.Contains(a) && b[3] != 0 && b[3] != 255
}

func (m *ipam) release(ip string) {
	if a, err := netip.ParseAddr(ip); err == nil {
		m.mu.Lock()
		delete(m.used, a)
		m.mu.Unlock()
	}
}
