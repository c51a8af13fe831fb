package nodeagent

// Containers run in a private mount namespace each, so that a process sees
// its volumes at the mount paths of the pod spec and nothing the agent
// mounts or creates for it appears on the machine itself.
//
// The agent starts a container as /proc/self/exe (the agent's own binary)
// with the container's argv and only containerHelperEnv in its environment
// (the path of the container's spec), in a new mount namespace
// (SysProcAttr.Unshareflags CLONE_NEWNS, which also makes every mount
// private). That helper, run by this package's init before anything else,
// reads the container's spec (a JSON file in the container's directory),
// builds the container's root and exec's the container command, which keeps
// the helper's pid (the agent's records, signals and process group stay
// right). The root is:
//
//   - a tmpfs (in the container's directory, visible only in the namespace)
//     holding a recursive bind mount of every entry of the machine's / (and
//     its symlinks as they are): the container sees the machine's files,
//     and writes to existing paths reach them, as before (the operator and
//     the e2e tests outside the pods read Flink's files at the paths Flink
//     names);
//   - every volume bound at its mountPath (subPath and readOnly honoured;
//     volumes of the API's data — configMap, secret, downwardAPI,
//     projected — read-only, as the kubelet mounts them), parents first.
//     A mount point that does not exist is created in a tmpfs "mirror" of
//     its nearest existing directory: a tmpfs over that directory (in the
//     namespace) with each original entry bound back. So /flink-data or
//     /var/run/secrets/kubernetes.io/serviceaccount is created inside the
//     namespace only, never on the machine. Symlinks on the way are
//     resolved inside the new root.
//
// A container of the operator's image (containerIdentity) gets two more
// things of a pod: a UTS namespace of its own (CLONE_NEWUTS) whose hostname
// the helper sets to the pod's, and the pod's hosts file as /etc/hosts. The
// agent replaces that file by rename (writeFileIfChanged), and a bind mount
// of a file keeps showing the inode it was made with, so the helper binds
// the file's directory (read-only, at hostsMount, a path that exists only
// in the namespace) and makes /etc/hosts a symlink to the file in it, in a
// tmpfs mirror of /etc: every rename is visible at once and a reader sees
// one whole version or the next, never a partial write; the machine's
// /etc/hosts is left alone.
//
// Each container also gets a PID namespace of its own (CLONE_NEWPID, as a
// kubelet's container with shareProcessNamespace false): the helper is
// cloned as PID 1 of it, and the command it exec's stays PID 1. The helper
// mounts a fresh /proc in the root (instead of binding the machine's), so
// that ps, /proc/1/cmdline and $$ inside show the namespace's processes.
// Outside, the process keeps one host pid (exec.Cmd's Process.Pid, the
// agent's record, the container's status containerID local://<host pid>),
// is the leader of its process group and has the parent-death signal. When
// PID 1 ends, the kernel kills whatever else runs in the namespace. As with
// any container runtime, PID 1 receives only the signals it has a handler
// for, from inside the namespace; from the agent (the parent namespace) also
// SIGKILL: a SIGTERM to a command that does not handle it (sleep, a shell
// without a trap) has no effect on it, and the agent's stop then takes the
// grace period before its SIGKILL, as a kubelet's does.
//
// A container of the busybox image (busyboxRoot) does not see the machine's
// files: its root is a tmpfs with Debian's busybox-static at /bin/busybox,
// a symlink per applet in /bin, /etc (passwd, group, resolv.conf, hosts),
// /dev (the usual device nodes bound from the machine), /proc, /tmp and its
// volumes (see buildBusyboxRoot).
//
// Then the helper chroots into the root, changes to the working directory
// and exec's the command (a command without a slash is looked up in the
// container's PATH inside the root). All of it needs CAP_SYS_ADMIN (root); without it
// the container fails to start with a message that says so, unless the
// agent runs with Config.NoMountNamespaces (the old behaviour: volumes only
// through Flink's configuration and arguments).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// containerHelperEnv, the only variable of the agent's binary re-executed as
// the helper that sets up a container's mount namespace, names the
// container's spec file. The helper has the container's argv already, so
// that its command line is the container's from the start (the agent's
// record of its processes compares command lines).
const containerHelperEnv = "FLINKOP_NODEAGENT_CONTAINER_SPEC"

// mountSpec is one bind mount of a container: Source, a host path, at
// Target, a path in the container.
type mountSpec struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// containerIdentity is what a container gets of its pod beyond its mounts
// (the operator's image, see prepareOperator); the zero value adds nothing.
type containerIdentity struct {
	// Hostname, when set, is the container's hostname, in a UTS namespace
	// of its own.
	Hostname string `json:"hostname,omitempty"`
	// HostsDir, when set, is the host directory holding the pod's hosts
	// file, "hosts": /etc/hosts in the container shows it, and every
	// later version of it (see the file's comment).
	HostsDir string `json:"hostsDir,omitempty"`
	// Busybox, when set, makes the container's root the busybox image's
	// instead of the machine's files.
	Busybox *busyboxRoot `json:"busybox,omitempty"`
}

// busyboxRoot is the root of a container of the busybox image: the busybox
// binary (a host path) at /bin/busybox and a symlink /bin/<applet> to it for
// each applet.
type busyboxRoot struct {
	Binary  string   `json:"binary"`
	Applets []string `json:"applets"`
}

// hostsMount is where a container with containerIdentity.HostsDir sees that
// directory; its /etc/hosts is a symlink to the file in it.
const hostsMount = "/.nodeagent/dns"

// helperSpec is what the helper does: mount, chroot, exec.
type helperSpec struct {
	// Root is an empty host directory where the container's root (a tmpfs)
	// is mounted in the namespace.
	Root   string      `json:"root"`
	Mounts []mountSpec `json:"mounts"`
	containerIdentity
	// Path, Args, Env and Dir are the command (as exec.Cmd has them; Dir
	// is a path in the container, "/" when empty).
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
}

func init() {
	specFile := os.Getenv(containerHelperEnv)
	if specFile == "" {
		return
	}
	// Only reached through exec: the error goes to the container's log.
	err := containerInit(specFile)
	fmt.Fprintf(os.Stderr, "node agent: container setup failed: %v\n", err)
	os.Exit(127)
}

// errNoMountNamespace explains a start failure without CAP_SYS_ADMIN.
var errNoMountNamespace = errors.New("the node agent runs every container in a private mount namespace (its volumes at their mount paths), " +
	"which needs root (CAP_SYS_ADMIN); run the agent as root, or with --no-mount-namespaces (Config.NoMountNamespaces: " +
	"volumes reach Flink only through its configuration and arguments, and mount paths are not created)")

// inMountNamespace returns a command that runs cmd in a new mount namespace
// with mounts (sorted by the helper, parents first) and root under dir; cmd
// is not started, and only its Path, Args, Env and Dir are used.
func inMountNamespace(cmd *exec.Cmd, dir string, mounts []mountSpec) (*exec.Cmd, error) {
	return inContainerNamespaces(cmd, dir, mounts, containerIdentity{})
}

// inContainerNamespaces is inMountNamespace with the pod's identity: with
// id.Hostname the command also gets a UTS namespace of its own with that
// hostname, with id.HostsDir the pod's hosts file at /etc/hosts.
func inContainerNamespaces(cmd *exec.Cmd, dir string, mounts []mountSpec, id containerIdentity) (*exec.Cmd, error) {
	spec := helperSpec{
		Root:              filepath.Join(dir, "rootfs"),
		Mounts:            mounts,
		containerIdentity: id,
		Path:              cmd.Path,
		Args:              cmd.Args,
		Env:               cmd.Env,
		Dir:               cmd.Dir,
	}
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if spec.Env == nil {
		spec.Env = os.Environ()
	}
	spec.Env = dedupEnv(spec.Env)
	if err := os.MkdirAll(spec.Root, 0o755); err != nil {
		return nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	specFile := filepath.Join(dir, "container.json")
	if err := os.WriteFile(specFile, b, 0o600); err != nil {
		return nil, err
	}
	// Unshareflags for the mount namespace (Go then makes every mount
	// private in it), Cloneflags for the PID namespace: unshare would put
	// only the helper's children in a new one, clone makes the helper
	// itself its PID 1.
	flags := uintptr(syscall.CLONE_NEWNS)
	if id.Hostname != "" {
		flags |= syscall.CLONE_NEWUTS
	}
	return &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        cmd.Args,
		Env:         []string{containerHelperEnv + "=" + specFile},
		SysProcAttr: &syscall.SysProcAttr{Unshareflags: flags, Cloneflags: syscall.CLONE_NEWPID},
	}, nil
}

// dedupEnv keeps the last value of each variable, as exec.Cmd does (the
// helper's execve passes the list as it is).
func dedupEnv(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	out := make([]string, 0, len(last))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}

// startError turns the error of starting the helper into one that says what
// is missing.
func startError(err error) error {
	if errors.Is(err, syscall.EPERM) {
		return fmt.Errorf("%w: %v", errNoMountNamespace, err)
	}
	return err
}

// containerInit runs in the helper: it builds the root, chroots and execs.
func containerInit(specFile string) error {
	b, err := os.ReadFile(specFile)
	if err != nil {
		return err
	}
	var spec helperSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return err
	}
	if spec.Hostname != "" {
		// In the UTS namespace the agent unshared for this container only.
		if err := syscall.Sethostname([]byte(spec.Hostname)); err != nil {
			return fmt.Errorf("hostname %s: %w", spec.Hostname, err)
		}
	}
	r := &rootBuilder{root: spec.Root, mirrored: map[string]bool{}, links: map[string]string{}}
	if err := syscall.Mount("tmpfs", r.root, "tmpfs", syscall.MS_NOSUID, "mode=755"); err != nil {
		return fmt.Errorf("tmpfs at %s: %w", r.root, err)
	}
	// Unbindable: the recursive binds of the machine's directories (one of
	// which holds r.root) leave the root itself out.
	if err := syscall.Mount("", r.root, "", syscall.MS_UNBINDABLE, ""); err != nil {
		return fmt.Errorf("unbindable %s: %w", r.root, err)
	}
	if spec.Busybox != nil {
		if err := r.buildBusyboxRoot(spec.Busybox); err != nil {
			return fmt.Errorf("busybox root: %w", err)
		}
	} else if err := r.mirror("/"); err != nil {
		return err
	}
	var etcHosts string // the container path of /etc/hosts, symlinks resolved
	if spec.HostsDir != "" {
		etc, missing, err := r.resolve("/etc")
		if err != nil || len(missing) > 0 {
			return fmt.Errorf("/etc for the pod's hosts file: missing %v, %v", missing, err)
		}
		// Known before any mirror of /etc is made (a volume below /etc
		// makes one), so that each mirror puts the link in place of the
		// machine's file.
		etcHosts = path.Join(etc, "hosts")
		// Relative: it resolves the same from outside the container too,
		// through /proc/<pid>/root (where an absolute link would lead
		// to the reader's root).
		link, err := filepath.Rel(etc, path.Join(hostsMount, "hosts"))
		if err != nil {
			return err
		}
		r.links[etcHosts] = link
	}
	mounts := append([]mountSpec(nil), spec.Mounts...)
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].Target) < depth(mounts[j].Target) })
	for _, m := range mounts {
		if err := r.bind(m); err != nil {
			return fmt.Errorf("mount %s at %s: %w", m.Source, m.Target, err)
		}
	}
	if spec.HostsDir != "" {
		if err := r.bind(mountSpec{Source: spec.HostsDir, Target: hostsMount, ReadOnly: true}); err != nil {
			return fmt.Errorf("mount the pod's hosts file: %w", err)
		}
		if err := r.link(etcHosts); err != nil {
			return fmt.Errorf("/etc/hosts: %w", err)
		}
	}
	// The PID namespace's own /proc (the helper is its PID 1), not the
	// machine's (mirror leaves it out).
	if err := os.MkdirAll(r.host("/proc"), 0o555); err != nil {
		return err
	}
	if err := syscall.Mount("proc", r.host("/proc"), "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := syscall.Chroot(r.root); err != nil {
		return fmt.Errorf("chroot %s: %w", r.root, err)
	}
	dir := spec.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	bin, err := lookPath(spec.Path, spec.Env)
	if err != nil {
		return err
	}
	return syscall.Exec(bin, spec.Args, spec.Env)
}

// lookPath finds a command without a slash in the PATH of env (in the
// container's root, after the chroot), as a container runtime does; a path
// with a slash is used as it is.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	pathVar := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, file)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in the container's PATH %s", file, pathVar)
}

func depth(p string) int { return strings.Count(path.Clean("/"+p), "/") }

// rootBuilder builds a container's root in the helper's mount namespace.
type rootBuilder struct {
	root string // host path of the root
	// mirrored are the directories (container paths) that are tmpfs
	// mirrors already: new entries go there directly.
	mirrored map[string]bool
	// links are entries (container paths) that a mirror of their
	// directory makes symlinks (to the value) instead of binding the
	// machine's entry back.
	links map[string]string
}

// host is the path of container path p in the (not yet chrooted) helper.
func (r *rootBuilder) host(p string) string { return filepath.Join(r.root, p) }

// mirror makes container directory dir a tmpfs (in the namespace) with each
// of its entries bound back: symlinks copied, directories and other files
// bound recursively at an empty directory or file of the same name. For
// dir "/" the source is the machine's root, and r.root is already a tmpfs.
func (r *rootBuilder) mirror(dir string) error {
	if r.mirrored[dir] {
		return nil
	}
	target := r.host(dir)
	var src string
	if dir == "/" {
		src = "/"
	} else {
		// Keep a handle on the directory before it is covered.
		fd, err := syscall.Open(target, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", dir, err)
		}
		defer syscall.Close(fd)
		src = fmt.Sprintf("/proc/self/fd/%d", fd)
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		if err := syscall.Mount("tmpfs", target, "tmpfs", syscall.MS_NOSUID, fmt.Sprintf("mode=%o", st.Mode().Perm())); err != nil {
			return fmt.Errorf("tmpfs at %s: %w", dir, err)
		}
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(target, e.Name())
		if _, ok := r.links[path.Join(dir, e.Name())]; ok {
			continue // r.link's
		}
		if dir == "/" && e.Name() == "proc" {
			continue // the namespace's own, mounted last
		}
		if e.Type()&os.ModeSymlink != 0 {
			link, err := os.Readlink(from)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, to); err != nil {
				return err
			}
			continue
		}
		if err := placeholder(to, e.IsDir()); err != nil {
			return err
		}
		if err := syscall.Mount(from, to, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			if e.IsDir() || !errors.Is(err, syscall.ENOENT) {
				return fmt.Errorf("bind %s: %w", path.Join(dir, e.Name()), err)
			}
			os.Remove(to) // vanished meanwhile
		}
	}
	r.mirrored[dir] = true
	for p := range r.links {
		if path.Dir(p) == dir {
			if err := r.link(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// link makes container path p (a key of r.links, its directory resolved)
// the symlink r.links names, in a mirror of its directory: never on the
// machine.
func (r *rootBuilder) link(p string) error {
	dir := path.Dir(p)
	if !r.mirrored[dir] {
		return r.mirror(dir) // which links p
	}
	h := r.host(p)
	if cur, err := os.Readlink(h); err == nil && cur == r.links[p] {
		return nil
	}
	if err := os.Remove(h); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Symlink(r.links[p], h)
}

func placeholder(p string, dir bool) error {
	if dir {
		return os.Mkdir(p, 0o755)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// resolve resolves container path p inside the root: symlinks are followed
// relative to the root (an absolute link starts over at the root, ".."
// stops there). It returns the resolved container path of the longest
// existing prefix and the components that do not exist.
func (r *rootBuilder) resolve(p string) (existing string, missing []string, err error) {
	todo := splitPath(p)
	cur := "/"
	for links := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		fi, err := os.Lstat(r.host(next))
		if errors.Is(err, os.ErrNotExist) {
			return cur, append([]string{c}, todo...), nil
		}
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 {
			return "", nil, fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		link, err := os.Readlink(r.host(next))
		if err != nil {
			return "", nil, err
		}
		if strings.HasPrefix(link, "/") {
			cur = "/"
		}
		todo = append(splitPath(link), todo...)
	}
	return cur, nil, nil
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// bind mounts m.Source at m.Target in the root, creating the mount point
// (in a mirror, never on the machine) if it does not exist.
func (r *rootBuilder) bind(m mountSpec) error {
	st, err := os.Stat(m.Source)
	if err != nil {
		return err
	}
	existing, missing, err := r.resolve(m.Target)
	if err != nil {
		return err
	}
	target := existing
	if len(missing) > 0 {
		if err := r.mirror(existing); err != nil {
			return err
		}
		for i, c := range missing {
			target = path.Join(target, c)
			if err := placeholder(r.host(target), st.IsDir() || i < len(missing)-1); err != nil {
				return err
			}
			r.mirrored[target] = true // created on a tmpfs: a new entry needs no mirror
		}
	} else if fi, err := os.Stat(r.host(target)); err != nil {
		return err
	} else if fi.IsDir() != st.IsDir() {
		return fmt.Errorf("mount point %s is %s, the source %s", target, kind(fi), kind(st))
	}
	h := r.host(target)
	if err := syscall.Mount(m.Source, h, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return err
	}
	delete(r.mirrored, target) // covered: what goes below it now is the source's
	for p := range r.mirrored {
		if strings.HasPrefix(p, target+"/") {
			delete(r.mirrored, p)
		}
	}
	if m.ReadOnly {
		if err := syscall.Mount("", h, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("read-only: %w", err)
		}
	}
	return nil
}

func kind(fi os.FileInfo) string {
	if fi.IsDir() {
		return "a directory"
	}
	return "not a directory"
}
