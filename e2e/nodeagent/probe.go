package nodeagent

// The kubelet's probes, for the containers whose pod specs are written for a
// kubelet (container.kubeletProbes: the operator's image, host commands).
// As the kubelet (pkg/kubelet/prober): a startupProbe runs first and holds
// the other two back until it succeeds; a livenessProbe or startupProbe
// that fails failureThreshold times in a row kills the run (SIGTERM, SIGKILL
// after the probe's or the pod's termination grace period, capped like a
// deletion's), which then restarts unless restartPolicy is Never; the
// readinessProbe makes the container ready after successThreshold successes
// in a row and unready after failureThreshold failures (no readinessProbe:
// ready once started). Each probe waits initialDelaySeconds from the run's
// start, then runs every periodSeconds with timeoutSeconds; unset values
// take the kubelet's defaults (the API server fills them in anyway).
// httpGet (2xx and 3xx succeed; redirects followed on the same host only,
// a redirect elsewhere succeeds, as with the kubelet) and tcpSocket connect
// to the pod IP unless they name a host; a named port is looked up in the
// container's ports. exec and grpc probes are not run: they count as
// successes (logged once per run).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The kubelet's probe defaults (k8s.io/api/core/v1 Probe).
const (
	defaultProbePeriod      = 10 * time.Second
	defaultProbeTimeout     = time.Second
	defaultSuccessThreshold = 1
	defaultFailureThreshold = 3
)

// probeTimings are a probe's timings and thresholds, defaults filled in.
type probeTimings struct {
	initialDelay, period, timeout time.Duration
	success, failure              int
}

func timingsOf(p *corev1.Probe) probeTimings {
	t := probeTimings{
		initialDelay: time.Duration(p.InitialDelaySeconds) * time.Second,
		period:       defaultProbePeriod,
		timeout:      defaultProbeTimeout,
		success:      defaultSuccessThreshold,
		failure:      defaultFailureThreshold,
	}
	if p.PeriodSeconds > 0 {
		t.period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		t.timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.SuccessThreshold > 0 {
		t.success = int(p.SuccessThreshold)
	}
	if p.FailureThreshold > 0 {
		t.failure = int(p.FailureThreshold)
	}
	return t
}

// outcome is a probe's current result: unknown until a threshold is met
// (the startup probe's start), then success or failure.
type outcome int

const (
	outcomeUnknown outcome = iota
	outcomeSuccess
	outcomeFailure
)

// runProbes runs run p's probes until it ends or ctx does.
func (c *container) runProbes(ctx context.Context, p *proc) {
	spec := c.spec
	if sp := spec.StartupProbe; sp != nil {
		started := false
		c.probeLoop(ctx, p, "startup", sp, outcomeUnknown, func(ok bool) bool {
			if ok {
				started = true
			} else {
				c.probeKill(p, "startup", sp)
			}
			return true // done either way
		})
		if !started {
			return
		}
		c.setStartupDone(p)
	}
	if lp := spec.LivenessProbe; lp != nil {
		go c.probeLoop(ctx, p, "liveness", lp, outcomeSuccess, func(ok bool) bool {
			if !ok {
				c.probeKill(p, "liveness", lp)
				return true
			}
			return false
		})
	}
	rp := spec.ReadinessProbe
	if rp == nil {
		c.setReady(p, true) // as the kubelet: ready once started
		return
	}
	c.probeLoop(ctx, p, "readiness", rp, outcomeFailure, func(ok bool) bool {
		c.setReady(p, ok)
		return false
	})
}

// probeLoop runs probe pr of run p (initial delay from the run's start,
// then every period) and calls changed with the new result each time a
// threshold changes it from current (initially initial), until changed
// returns true, p ends or ctx does.
func (c *container) probeLoop(ctx context.Context, p *proc, kind string, pr *corev1.Probe, initial outcome, changed func(ok bool) (done bool)) {
	t := timingsOf(pr)
	wait := func(d time.Duration) bool {
		if d <= 0 {
			return ctx.Err() == nil
		}
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
			return true
		case <-ctx.Done():
		case <-p.done:
		}
		return false
	}
	if pr.HTTPGet == nil && pr.TCPSocket == nil {
		c.logf("%s probe: exec and grpc probes are not run by the local node agent; counted as successes", kind)
	}
	if !wait(time.Until(p.started.Add(t.initialDelay))) {
		return
	}
	current := initial
	var last outcome // of the previous probe
	run := 0         // probes in a row with result last
	for {
		ok, msg := c.probeOnce(ctx, pr, t.timeout)
		select {
		case <-p.done:
			return // a probe of a run that just ended says nothing
		default:
		}
		if ctx.Err() != nil {
			return
		}
		result, threshold := outcomeSuccess, t.success
		if !ok {
			result, threshold = outcomeFailure, t.failure
		}
		if result != last {
			last, run = result, 0
			if !ok {
				c.logf("%s probe failed: %s", kind, msg)
			}
		}
		run++
		if run >= threshold && result != current {
			current = result
			if changed(ok) {
				return
			}
		}
		if !wait(t.period) {
			return
		}
	}
}

// probeKill ends run p after its kind probe failed, as the kubelet kills a
// container that failed its liveness or startup probe: SIGTERM, SIGKILL
// after the probe's terminationGracePeriodSeconds, else the pod's (capped
// at MaxGracePeriod). The run then restarts unless restartPolicy is Never
// (container.run).
func (c *container) probeKill(p *proc, kind string, pr *corev1.Probe) {
	secs := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pr.TerminationGracePeriodSeconds != nil {
		secs = *pr.TerminationGracePeriodSeconds
	} else if g := c.w.current().Spec.TerminationGracePeriodSeconds; g != nil {
		secs = *g
	}
	grace := min(time.Duration(secs)*time.Second, c.w.a.cfg.MaxGracePeriod)
	c.mu.Lock()
	if c.proc != p {
		c.mu.Unlock()
		return
	}
	c.probeKilled = p
	c.mu.Unlock()
	c.logf("failed its %s probe %d times: killing it (pid %d, grace %s); restartPolicy decides a restart",
		kind, timingsOf(pr).failure, p.pid(), grace)
	if err := p.stop(grace); err != nil {
		c.logf("%v", err)
	}
}

func (c *container) killedByProbe(p *proc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.probeKilled == p
}

// setStartupDone marks run p started (its startup probe succeeded).
func (c *container) setStartupDone(p *proc) {
	c.mu.Lock()
	changed := c.proc == p && !c.startupDone
	if changed {
		c.startupDone = true
	}
	c.mu.Unlock()
	if changed {
		c.logf("started (startup probe succeeded after %s)", time.Since(p.started).Round(time.Millisecond))
		c.w.statusChanged()
	}
}

// probeOnce runs pr once: ok, or why not.
func (c *container) probeOnce(ctx context.Context, pr *corev1.Probe, timeout time.Duration) (ok bool, msg string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch h := pr.ProbeHandler; {
	case h.HTTPGet != nil:
		port, err := containerPort(c.spec, h.HTTPGet.Port)
		if err != nil {
			return false, err.Error()
		}
		return httpProbe(ctx, c.probeHost(h.HTTPGet.Host), port, h.HTTPGet)
	case h.TCPSocket != nil:
		port, err := containerPort(c.spec, h.TCPSocket.Port)
		if err != nil {
			return false, err.Error()
		}
		return tcpProbe(ctx, c.probeHost(h.TCPSocket.Host), port)
	}
	return true, "" // exec, grpc: not run (see the file's comment)
}

func (c *container) probeHost(host string) string {
	if host != "" {
		return host
	}
	return c.ip
}

// containerPort is a probe's port: a number, or the name of one of the
// container's ports.
func containerPort(spec *corev1.Container, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		if port.IntVal <= 0 || port.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port %d", port.IntVal)
		}
		return int(port.IntVal), nil
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return containerPort(spec, intstr.FromInt32(int32(n)))
	}
	for _, p := range spec.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", spec.Name, port.StrVal)
}

// probeTransport: no proxy, no connection kept (every probe connects, as
// the kubelet's), any certificate for https (the kubelet does not verify).
var probeTransport = &http.Transport{
	Proxy:             nil,
	DisableKeepAlives: true,
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's https probes
}

// probeHTTPClient follows redirects on the same host; a redirect to another
// one ends there, its 3xx a success, as with the kubelet.
var probeHTTPClient = &http.Client{
	Transport: probeTransport,
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Hostname() != via[0].URL.Hostname() {
			return http.ErrUseLastResponse
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	},
}

// httpProbe is an httpGet probe: a status from 200 to 399 succeeds.
func httpProbe(ctx context.Context, host string, port int, h *corev1.HTTPGetAction) (bool, string) {
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u, err := url.Parse(h.Path)
	if err != nil {
		u = &url.URL{Path: h.Path}
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	if u.Path != "" && !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/nodeagent")
	req.Header.Set("Accept", "*/*")
	for _, hd := range h.HTTPHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	resp, err := probeHTTPClient.Do(req)
	if err != nil {
		return false, fmt.Sprintf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, ""
	}
	return false, fmt.Sprintf("GET %s: HTTP %d %s", u, resp.StatusCode, strings.TrimSpace(string(body)))
}

// tcpProbe is a tcpSocket probe: the connection is made.
func tcpProbe(ctx context.Context, host string, port int) (bool, string) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, fmt.Sprintf("connect %s: %v", addr, err)
	}
	conn.Close()
	return true, ""
}
