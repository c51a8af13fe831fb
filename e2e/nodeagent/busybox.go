package nodeagent

// Containers of the busybox image (busybox, busybox:1.35.0,
// docker.io/library/busybox:latest, ...) run Debian's busybox-static binary
// (Config.Busybox; e2e/localcluster fetches it with apt-get download) in a
// root of their own that looks like the image's: /bin/busybox, a symlink
// per applet in /bin, /bin/sh among them, and no file of the machine but a
// few device nodes. Upstream's e2e data uses one as an init container that
// fetches a job jar with wget into an emptyDir.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"syscall"
)

// busyboxImageEnv is the environment the busybox image gives its processes
// (its PATH, and HOME as container runtimes set it for root); the
// container's env comes on top.
var busyboxImageEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
}

// IsBusyboxImage reports whether image is busybox: its name (registry,
// path, tag and digest left out) is "busybox".
func IsBusyboxImage(image string) bool { return imageName(image) == "busybox" }

// busyboxArgv is what a busybox container runs: the image has no
// entrypoint and CMD ["sh"], so command and args as given, the args alone
// when there is no command, and sh when there is neither.
func busyboxArgv(command, args []string) []string {
	argv := slices.Concat(command, args)
	if len(argv) == 0 {
		return []string{"sh"}
	}
	return argv
}

// busyboxApplets lists the applets of busybox binary bin (busybox --list).
func busyboxApplets(bin string) ([]string, error) {
	out, err := exec.Command(bin, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", bin, err)
	}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			applets = append(applets, a)
		}
	}
	if !slices.Contains(applets, "sh") {
		return nil, fmt.Errorf("%s has no sh applet (applets: %d)", bin, len(applets))
	}
	return applets, nil
}

// prepareBusybox runs the container's command (busyboxArgv) in the busybox
// root, with the image's environment and the container's, the pod's
// hostname (a UTS namespace of its own) and the pod's hosts file as
// /etc/hosts, as the operator's image gets them.
func (c *container) prepareBusybox(env []string, f podFields) error {
	argv := c.class.Args
	hostname := containerHostname(f.pod)
	id := containerIdentity{Hostname: hostname, Busybox: &busyboxRoot{Binary: c.w.a.cfg.Busybox, Applets: c.w.a.busyboxApplets}}
	if !slices.ContainsFunc(c.mounts, func(m mountSpec) bool { return path.Clean(m.Target) == "/etc/hosts" }) {
		id.HostsDir = c.w.hostsDir()
	}
	c.w.setNeedsHosts()
	c.command = func(ctx context.Context) (*exec.Cmd, error) {
		// Not exec.Command: the command is looked up in the container's
		// root (by the helper), not on the machine.
		cmd := &exec.Cmd{
			Path: argv[0],
			Args: argv,
			Env:  slices.Concat(busyboxImageEnv, []string{"HOSTNAME=" + hostname}, env),
			Dir:  c.spec.WorkingDir,
		}
		return c.inPodAs(cmd, id)
	}
	c.w.logf("container %s: busybox %q (image %s, hostname %s)", c.spec.Name, argv, c.spec.Image, hostname)
	return nil
}

// busyboxEtc are the files of the busybox image's /etc (the agent adds
// hosts and resolv.conf).
var busyboxEtc = map[string]string{
	"passwd":        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n",
	"group":         "root:x:0:\nnobody:x:65534:\n",
	"nsswitch.conf": "hosts: files dns\n",
}

// busyboxDevices are the device nodes a container runtime gives a
// container, bound from the machine's /dev.
var busyboxDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// buildBusyboxRoot fills the (empty tmpfs) root with the busybox image's
// files instead of mirroring the machine's; every directory it makes is on
// the tmpfs, so volumes below them need no mirror.
func (r *rootBuilder) buildBusyboxRoot(b *busyboxRoot) error {
	dirs := []struct {
		p    string
		mode os.FileMode
	}{
		{"/bin", 0o755}, {"/dev", 0o755}, {"/etc", 0o755}, {"/home", 0o755}, {"/root", 0o700},
		{"/tmp", 0o777 | os.ModeSticky}, {"/usr", 0o755}, {"/var", 0o755}, {"/proc", 0o555},
	}
	r.mirrored["/"] = true
	for _, d := range dirs {
		if err := os.Mkdir(r.host(d.p), d.mode.Perm()); err != nil {
			return err
		}
		if err := os.Chmod(r.host(d.p), d.mode); err != nil { // umask, sticky bit
			return err
		}
		if d.p != "/dev" && d.p != "/proc" {
			r.mirrored[d.p] = true
		}
	}
	bin := r.host("/bin/busybox")
	if err := placeholder(bin, false); err != nil {
		return err
	}
	if err := syscall.Mount(b.Binary, bin, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", b.Binary, err)
	}
	if err := syscall.Mount("", bin, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("read-only %s: %w", bin, err)
	}
	for _, a := range b.Applets {
		if err := os.Symlink("busybox", r.host("/bin/"+a)); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	for name, content := range busyboxEtc {
		if err := os.WriteFile(r.host("/etc/"+name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	hosts := []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if err := os.WriteFile(r.host("/etc/hosts"), hosts, 0o644); err != nil { // replaced by the pod's, see containerInit
		return err
	}
	// The machine's resolver configuration (names outside the pods: the
	// pod's hosts file has the cluster's).
	if resolv, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		if err := os.WriteFile(r.host("/etc/resolv.conf"), resolv, 0o644); err != nil {
			return err
		}
	}
	return r.busyboxDev()
}

// busyboxDev makes /dev a tmpfs with the usual device nodes (bound from the
// machine's), the fd links, pts and shm.
func (r *rootBuilder) busyboxDev() error {
	dev := r.host("/dev")
	if err := syscall.Mount("tmpfs", dev, "tmpfs", syscall.MS_NOSUID|syscall.MS_NOEXEC, "mode=755"); err != nil {
		return fmt.Errorf("tmpfs at /dev: %w", err)
	}
	for _, d := range busyboxDevices {
		to := path.Join(dev, d)
		if err := placeholder(to, false); err != nil {
			return err
		}
		if err := syscall.Mount("/dev/"+d, to, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", d, err)
		}
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, path.Join(dev, name)); err != nil {
			return err
		}
	}
	if err := os.Mkdir(path.Join(dev, "pts"), 0o755); err != nil {
		return err
	}
	shm := path.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return err
	}
	return syscall.Mount("shm", shm, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=1777,size=65536k")
}

// busyboxSupport says why the agent cannot run a busybox container ("" when
// it can).
func (a *Agent) busyboxSupport(image string) string {
	switch {
	case a.cfg.NoMountNamespaces:
		return fmt.Sprintf("image %q runs Debian's busybox-static binary in a root of its own, which needs mount namespaces "+
			"(the agent runs with --no-mount-namespaces)", image)
	case a.cfg.Busybox == "":
		return fmt.Sprintf("image %q runs a local busybox binary (Debian's busybox-static) and this agent has none "+
			"(node-agent --busybox, Config.Busybox; e2e/localcluster passes one it fetches with apt-get download busybox-static)", image)
	}
	return ""
}
