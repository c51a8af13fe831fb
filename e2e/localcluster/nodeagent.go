package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// startNodeAgent starts the node agent from binDir and waits until it has
// registered its node.
func (c *Cluster) startNodeAgent(ctx context.Context, binDir string) error {
	t := time.Now()
	c.NodeAgentDir = filepath.Join(c.Dir, "node-agent")
	c.NodeAgentRecord = strings.TrimSuffix(c.StatePath, ".json") + "-node-agent.json"
	ready := filepath.Join(c.Dir, "node-agent.ready")
	args := append([]string{
		filepath.Join(binDir, "node-agent"),
		"--kubeconfig=" + c.Kubeconfig,
		"--node-name=" + NodeAgentNode,
		"--dir=" + c.NodeAgentDir,
		"--record=" + c.NodeAgentRecord,
		"--ready-file=" + ready,
		"--fake-jobmanager=" + filepath.Join(binDir, "fake-jobmanager"),
		// Pods of the operator's image run this build (BuildCommands
		// builds it with the agent).
		"--operator-binary=" + filepath.Join(binDir, "flink-operator"),
		// Its kubelet API (kubectl logs): serving certificate, and the CA
		// of the apiserver's client certificate.
		"--tls-cert-file=" + c.pki.KubeletCert,
		"--tls-private-key-file=" + c.pki.KubeletKey,
		"--client-ca-file=" + c.pki.CACert,
	}, c.opts.NodeAgentArgs...)
	// Pods of the busybox image (upstream's e2e data fetches job jars with
	// busybox wget in an init container) run Debian's busybox-static;
	// without it only they wait (ImageNotSupportedByLocalAgent).
	if bin, err := Busybox(ctx); err != nil {
		c.logf("node-agent: no busybox for pods of the busybox image: %v", err)
	} else {
		args = append(args, "--busybox="+bin)
	}
	p, err := c.StartProcess(ProcessSpec{Name: "node-agent", Args: args, StopGrace: nodeAgentStopGrace})
	if err != nil {
		return err
	}
	c.NodeAgent = p
	for {
		if _, err := os.Stat(ready); err == nil {
			c.logf("node-agent ready in %s (node %s, log %s)", time.Since(t).Round(time.Millisecond), NodeAgentNode, p.LogPath)
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("node-agent exited (%v) before it was ready%s", p.Err(), logTail(p.LogPath))
		case <-ctx.Done():
			return fmt.Errorf("node-agent not ready: %w%s", ctx.Err(), logTail(p.LogPath))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopLeftovers kills what a record still lists as alive (the agent removes
// its record after stopping everything, so normally there is nothing) and
// removes the record. It reports every process it had to kill.
func stopLeftovers(path string) error {
	st, err := readState(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range slices.Backward(st.Processes) {
		if !p.isSame() {
			continue
		}
		errs = append(errs, fmt.Errorf("%s (pid %d) outlived the node agent", p.Name, p.PID))
		_ = terminate(p.PID, true, 0, func(d time.Duration) bool {
			for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if !p.isSame() {
					return true
				}
			}
			return !p.isSame()
		})
	}
	os.Remove(path)
	return errors.Join(errs...)
}
