// Command local-cluster runs the operator against a local, real control plane
// (etcd, kube-apiserver, kube-controller-manager on 127.0.0.1) with a node
// agent that runs the pods as local processes.
//
//	go run ./e2e/cmd/local-cluster run [--operator-args "..."] [--operator-process] [--no-operator] [--no-node-agent] [-- extra operator args]
//	go run ./e2e/cmd/local-cluster down
//
// run builds or locates the control-plane binaries, starts the control plane
// and the node agent (e2e/nodeagent: node local-node, whose pods run as real
// Flink JVMs for Flink images and as fake JobManagers for fake-jobmanager
// images, on loopback pod IPs), installs the CRDs from manifests/crds, grants
// the operator user cluster-admin, installs the operator as a pod with
// manifests/ (the node agent runs its image as ./cmd/flink-operator built
// from this checkout; --operator-process runs that binary as a process of
// this machine instead), waits for it to be ready, prints how to use the
// cluster (kubeconfigs, the ingress's address: Ingresses of class nginx on
// 127.0.0.1, port 30080 when free) and waits. Ctrl-C or
// SIGTERM stops the operator, the agent with every pod process, and the
// control plane, and checks that none of their processes is left. down stops
// processes recorded by earlier runs that were killed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flinkops/flink-operator/e2e/localcluster"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	// `go run` and make do not pass SIGTERM on to us: ask the kernel for a
	// SIGTERM when our parent dies, so the control plane is stopped then too.
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0)
	var err error
	switch os.Args[1] {
	case "run":
		restore := takeTerminal()
		err = run(os.Args[2:])
		restore()
	case "down":
		err = down()
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-cluster:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: local-cluster run [--operator-args "..."] [--operator-process] [--no-operator] [--no-node-agent] [--crds dir] [--keep] [-- operator args]
       local-cluster down`)
	os.Exit(2)
}

// startedEnv carries the time `make run` began (Unix nanoseconds), so that
// the ready figure includes building this command.
const startedEnv = "FLINKOP_RUN_STARTED_NS"

// commandStart is when the user's command began: $FLINKOP_RUN_STARTED_NS if
// set, else this process's start.
func commandStart() time.Time {
	if ns, err := strconv.ParseInt(os.Getenv(startedEnv), 10, 64); err == nil && ns > 0 {
		if t := time.Unix(0, ns); t.Before(time.Now()) {
			return t
		}
	}
	return time.Now()
}

// setupTimeout bounds each step after the binaries exist: installing the
// CRDs, the operator's first /readyz. Building (the control plane cold takes
// 15 minutes or more on 2 cores, the operator a minute) has no deadline: it
// cannot hang, it is only slow, and it reports its progress.
const setupTimeout = 3 * time.Minute

func run(args []string) error {
	begin := commandStart()
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	operatorArgs := fs.String("operator-args", "", "extra arguments for flink-operator (split on spaces)")
	noOperator := fs.Bool("no-operator", false, "start only the control plane (run the operator yourself)")
	crdDir := fs.String("crds", "", "directory of CRD YAMLs (default <module root>/manifests/crds)")
	keep := fs.Bool("keep", false, "keep the work dir (logs, etcd data) after stopping")
	noAgent := fs.Bool("no-node-agent", false, "start no node agent (pods stay Pending)")
	asProcess := fs.Bool("operator-process", false, "run the operator as a process of this machine (for debugging: a debugger, "+
		"your own flags) instead of as a pod of manifests/ in the cluster")
	fs.Parse(args)
	extra := append(strings.Fields(*operatorArgs), fs.Args()...)
	if *noAgent && !*noOperator && !*asProcess {
		return errors.New("--no-node-agent: nothing would run the operator's pod; add --operator-process or --no-operator")
	}
	asPod := !*noOperator && !*asProcess

	root, err := localcluster.ModuleRoot()
	if err != nil {
		return err
	}
	if *crdDir == "" {
		*crdDir = filepath.Join(root, "manifests", "crds")
	}
	// Signals cancel the start as well as end the wait.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	// Build the operator while the control plane starts.
	var opBin string
	built := make(chan error, 1)
	if !*noOperator && !asPod {
		// A stable path (git-ignored) lets go build skip the link when
		// nothing changed.
		opBin = filepath.Join(root, ".cache", "bin", "flink-operator")
		go func() {
			cmd := exec.CommandContext(ctx, "go", "build", "-o", opBin, "./cmd/flink-operator")
			cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				built <- fmt.Errorf("go build ./cmd/flink-operator: %w", err)
				return
			}
			built <- nil
		}()
	}

	// localcluster.Start bounds the start of the processes itself
	// (Options.StartTimeout), not the build of the binaries.
	c, err := localcluster.Start(ctx, localcluster.Options{Out: os.Stderr, KeepDir: *keep, NodeAgent: !*noAgent})
	if err != nil {
		return err
	}
	setupCtx, cancelSetup := context.WithTimeout(ctx, setupTimeout)
	defer cancelSetup()
	stop := func() error {
		if err := c.Stop(); err != nil {
			return fmt.Errorf("stop: %w", err)
		}
		fmt.Fprintf(os.Stderr, "local-cluster: stopped; none of the %d recorded processes is alive\n", len(c.Processes()))
		return nil
	}
	if err := setup(setupCtx, c, *crdDir, root); err != nil {
		return errors.Join(err, stop())
	}

	var op *localcluster.Process
	switch {
	case asPod:
		if err := installOperator(ctx, setupTimeout, c, root, extra); err != nil {
			return errors.Join(err, stop())
		}
	case !*noOperator:
		if op, err = startOperator(ctx, setupTimeout, c, opBin, built, append([]string{"--flink-endpoint=pod-ip"}, extra...)); err != nil {
			return errors.Join(err, stop())
		}
	}

	if err := os.MkdirAll(hostDataDir, 0o777); err != nil {
		return errors.Join(fmt.Errorf("host data directory: %w", err), stop())
	}
	os.Chmod(hostDataDir, 0o777) // Flink's uid may differ from ours on a real node; not here, but keep it like kind's
	envFile := filepath.Join(root, ".cache", "env")
	if err := writeEnvFile(envFile, c); err != nil {
		return errors.Join(err, stop())
	}
	defer removeEnvFile(envFile, c)

	ready := time.Since(begin).Round(10 * time.Millisecond)
	what := "control plane"
	if op != nil || asPod {
		what = "control plane and operator"
	}
	fmt.Printf("\n%s ready in %s from the command's start (CRDs Established)\n", what, ready)
	fmt.Printf("admin kubeconfig:    %s\n", c.Kubeconfig)
	fmt.Printf("operator kubeconfig: %s\n", c.OperatorKubeconfig)
	fmt.Printf("kubectl v1.37:       %s\n", c.KubectlPath)
	if c.NodeAgent != nil {
		fmt.Printf("node agent:          node %s, log %s\n", localcluster.NodeAgentNode, c.NodeAgent.LogPath)
		fmt.Printf("pod logs:            kubectl logs POD [-f] [--previous]; files %s/pods/<namespace>_<pod>_<uid>/logs/<container>/<restartCount>.log\n", c.NodeAgentDir)
	}
	if asPod {
		fmt.Printf("operator:            a pod of manifests/ (Deployment %s/%s, image %s run by the node agent as this checkout's build)\n", operatorNamespace, operatorDeployment, operatorImage)
		fmt.Printf("operator log:        kubectl logs -n %s deploy/%s -f\n", operatorNamespace, operatorDeployment)
	}
	fmt.Printf("host data:           %s (the hostPath of manifests/examples)\n", hostDataDir)
	if c.VolumesDir != "" {
		fmt.Printf("storage:             StorageClass %s (the default): a claim gets a hostPath volume in %s, deleted with the claim\n", localcluster.DefaultStorageClass, c.VolumesDir)
	}
	if c.IngressAddress != "" {
		fmt.Printf("ingresses:           class %s (the default) on http://%s/ ($INGRESS_ADDRESS); with a FlinkDeployment's spec.ingress of upstream's e2e data "+
			"(template \"/{{namespace}}/{{name}}(/|$)(.*)\", rewrite-target \"/$2\") its UI is http://%s/<namespace>/<name>/\n", localcluster.IngressClassName, c.IngressAddress, c.IngressAddress)
	}
	fmt.Printf("\nIn another terminal, from %s:\n\n  source .cache/env   # export KUBECONFIG=%s; export PATH=%s:$PATH; export INGRESS_ADDRESS=%s\n  kubectl get flinkdep,flinksessionjob,flinksnp -A\n\n", root, c.Kubeconfig, c.BinDir, c.IngressAddress)
	fmt.Println("Ctrl-C stops everything.")

	var exited, agentExited <-chan struct{}
	if op != nil {
		exited = op.Done()
	}
	if c.NodeAgent != nil {
		agentExited = c.NodeAgent.Done()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "\nlocal-cluster: stopping")
		return stop()
	case <-exited:
		return errors.Join(fmt.Errorf("flink-operator exited: %v", op.Err()), stop())
	case <-agentExited:
		return errors.Join(fmt.Errorf("node-agent exited: %v (log %s)", c.NodeAgent.Err(), c.NodeAgent.LogPath), stop())
	}
}

// hostDataDir is the hostPath volume of manifests/examples (savepoints and
// checkpoints): on this one-node cluster the node is this machine.
const hostDataDir = "/tmp/flink-data"

// writeEnvFile writes the shell lines that point kubectl at this cluster to
// file (`source .cache/env`, as the README's "Try it" does).
func writeEnvFile(file string, c *localcluster.Cluster) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(envFileContent(c)), 0o644)
}

func envFileContent(c *localcluster.Cluster) string {
	// INGRESS_ADDRESS: host:port of the cluster's ingress controller.
	return fmt.Sprintf("# written by make run (e2e/cmd/local-cluster); removed when it stops\nexport KUBECONFIG=%s\nexport PATH=%s:$PATH\nexport INGRESS_ADDRESS=%s\n",
		c.Kubeconfig, c.BinDir, c.IngressAddress)
}

// removeEnvFile removes file unless another run has replaced it since.
func removeEnvFile(file string, c *localcluster.Cluster) {
	if b, err := os.ReadFile(file); err == nil && string(b) == envFileContent(c) {
		os.Remove(file)
	}
}

// setup installs the CRDs, grants the operator user cluster-admin and, as
// manifests/kustomization.yaml does for a real install, gives namespace
// default the Flink ServiceAccount of native mode (manifests/flink-serviceaccount),
// so that upstream's samples (mode unset: native, serviceAccount flink)
// apply there as they are.
func setup(ctx context.Context, c *localcluster.Cluster, crdDir, root string) error {
	names, err := c.InstallCRDs(ctx, crdDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "local-cluster: CRDs Established: %s\n", strings.Join(names, ", "))
	if err := c.GrantClusterAdmin(ctx, localcluster.OperatorUser); err != nil {
		return err
	}
	if out, err := c.Kubectl("apply", "--server-side", "-k", filepath.Join(root, "manifests", "flink-serviceaccount")); err != nil {
		return fmt.Errorf("the Flink ServiceAccount in namespace default: %w\n%s", err, out)
	}
	fmt.Fprintln(os.Stderr, "local-cluster: the Flink ServiceAccount flink (manifests/flink-serviceaccount) in namespace default")
	return nil
}

// The operator as manifests/ installs it.
const (
	operatorNamespace  = "flink-operator"
	operatorDeployment = "flink-operator"
	operatorImage      = "ghcr.io/flinkops/flink-operator:latest"
)

// installOperator applies manifests/ (kustomize, server-side), as `kubectl apply -k` on a real
// cluster: the node agent runs the Deployment's image as the operator binary localcluster built
// from this checkout, in-cluster (its ServiceAccount, its ConfigMap, its probes, kubectl logs),
// with its webhook behind its Service. extra flags are appended to the container's args. It
// waits at most timeout for the Deployment to be available (its pod's /readyz).
func installOperator(ctx context.Context, timeout time.Duration, c *localcluster.Cluster, root string, extra []string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	if out, err := c.Kubectl("apply", "--server-side", "-k", filepath.Join(root, "manifests")); err != nil {
		return fmt.Errorf("kubectl apply -k manifests/: %w\n%s", err, out)
	}
	if len(extra) > 0 {
		var ops []string
		for _, a := range extra {
			v, _ := json.Marshal(a)
			ops = append(ops, `{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":`+string(v)+`}`)
		}
		if out, err := c.Kubectl("patch", "deployment", operatorDeployment, "-n", operatorNamespace, "--type=json",
			"-p", "["+strings.Join(ops, ",")+"]"); err != nil {
			return fmt.Errorf("adding %q to the operator's args: %w\n%s", extra, err, out)
		}
	}
	fmt.Fprintf(os.Stderr, "local-cluster: manifests/ applied; waiting for the operator pod\n")
	for {
		out, err := c.Kubectl("rollout", "status", "deployment/"+operatorDeployment, "-n", operatorNamespace, "--timeout=5s")
		if err == nil {
			fmt.Fprintf(os.Stderr, "local-cluster: operator pod ready in %s\n", time.Since(start).Round(time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			pods, _ := c.Kubectl("get", "pods", "-n", operatorNamespace, "-o", "wide")
			logs, _ := c.Kubectl("logs", "-n", operatorNamespace, "deployment/"+operatorDeployment, "--tail=40")
			return fmt.Errorf("the operator pod not ready in %s: %s\n%s\n%s\n%s", timeout, ctx.Err(), out, pods, logs)
		case <-time.After(time.Second):
		}
	}
}

// startOperator waits for the operator's build (no deadline), starts it and
// waits at most timeout for its /readyz.
func startOperator(ctx context.Context, timeout time.Duration, c *localcluster.Cluster, bin string, built <-chan error, extra []string) (*localcluster.Process, error) {
	select {
	case err := <-built:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ports := make([]int, 2)
	for i := range ports {
		p, err := localcluster.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	probe := "127.0.0.1:" + strconv.Itoa(ports[0])
	if ports[0] == ports[1] {
		return nil, errors.New("no two free ports")
	}
	args := append([]string{bin,
		"--kubeconfig", c.OperatorKubeconfig,
		"--health-probe-bind-address", probe,
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(ports[1]),
	}, extra...)
	if !slices.ContainsFunc(extra, func(a string) bool { return a == "--config" || strings.HasPrefix(a, "--config=") }) {
		// Session jobs' downloads are staged in the work dir: upstream's
		// default, /opt/flink/artifacts, is not writable here.
		conf := filepath.Join(c.Dir, "operator-config.yaml")
		line := fmt.Sprintf("kubernetes.operator.user.artifacts.base.dir: %q\n", filepath.Join(c.Dir, "artifacts"))
		if err := os.WriteFile(conf, []byte(line), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--config="+conf)
	}
	op, err := c.StartProcess(localcluster.ProcessSpec{Name: "flink-operator", Args: args, Output: os.Stderr})
	if err != nil {
		return nil, err
	}
	t := time.Now()
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get("http://" + probe + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Fprintf(os.Stderr, "local-cluster: flink-operator ready in %s\n", time.Since(t).Round(time.Millisecond))
				return op, nil
			}
		}
		select {
		case <-op.Done():
			return nil, fmt.Errorf("flink-operator exited before /readyz answered: %v", op.Err())
		case <-ctx.Done():
			return nil, fmt.Errorf("flink-operator /readyz on %s: %w", probe, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func down() error {
	stateDir := filepath.Join(localcluster.CacheDir(), "run")
	n, err := localcluster.StopStale(stateDir, os.Stderr)
	fmt.Fprintf(os.Stderr, "local-cluster: stopped %d stale processes\n", n)
	files, _ := filepath.Glob(filepath.Join(stateDir, "*.json"))
	for _, f := range files {
		fmt.Fprintf(os.Stderr, "local-cluster: %s belongs to a running owner (pid %s); stop that with Ctrl-C or kill\n",
			f, strings.SplitN(filepath.Base(f), "-", 2)[0])
	}
	return err
}
