package nodeagent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
)

// Kind is how the agent runs a container.
type Kind int

const (
	// Unsupported containers are never started: they stay waiting with
	// reason ReasonImageNotSupported.
	Unsupported Kind = iota
	// Flink containers run a real Flink JVM through e2e/flink.
	Flink
	// FakeJobManager containers run cmd/fake-jobmanager (or, for a
	// TaskManager of a fake cluster, an idle process).
	FakeJobManager
	// HostCommand containers (image HostCommandImage, with
	// Config.HostCommands only) run their command and args as they are.
	HostCommand
	// Operator containers (the project's own image, OperatorImage) run
	// Config.OperatorBinary, the locally built operator, with the
	// container's args.
	Operator
	// Busybox containers (image busybox, IsBusyboxImage) run their
	// command with Config.Busybox, Debian's busybox-static, in a root like
	// the image's (see busybox.go).
	Busybox
)

// OperatorImage is the repository of the operator's image (Dockerfile:
// ENTRYPOINT ["/flink-operator"]); any registry before it and any tag or
// digest after it name the same image to the agent, which runs
// Config.OperatorBinary for it.
const OperatorImage = "flinkops/flink-operator"

// operatorEntrypoint is the image's entrypoint, where the agent puts the
// operator binary in the container's mount namespace.
const operatorEntrypoint = "/flink-operator"

// HostCommandImage is the image of containers that run their command and
// args as a process of this machine (in the container's mount namespace),
// when the agent has Config.HostCommands (tests: `sh -c` containers). Off by
// default: it lets whoever may create pods run any command as the agent.
const HostCommandImage = "nodeagent.flinkops.io/host-command"

func (k Kind) String() string {
	switch k {
	case Flink:
		return "flink"
	case FakeJobManager:
		return "fake-jobmanager"
	case HostCommand:
		return "host-command"
	case Operator:
		return "operator"
	case Busybox:
		return "busybox"
	}
	return "unsupported"
}

// Container waiting reasons the agent reports.
const (
	// ReasonImageNotSupported: the agent cannot run this image.
	ReasonImageNotSupported = "ImageNotSupportedByLocalAgent"
	// ReasonFlinkVersionNotPinned: a Flink image of a line that e2e/flink does
	// not pin (e.g. flink:3.0).
	ReasonFlinkVersionNotPinned = "FlinkVersionNotPinned"
	// ReasonContainerCreating: volumes or the environment are being prepared.
	ReasonContainerCreating = "ContainerCreating"
	// ReasonCreateConfigError: a referenced ConfigMap/Secret key is missing,
	// or a Flink container has no mounted configuration.
	ReasonCreateConfigError = "CreateContainerConfigError"
	// ReasonStartError: the process could not be started.
	ReasonStartError = "StartError"
	// ReasonCrashLoopBackOff: waiting to restart an exited container.
	ReasonCrashLoopBackOff = "CrashLoopBackOff"
	// ReasonSidecarNotSupported: an init container with a restartPolicy
	// of its own (a sidecar), which the agent does not run.
	ReasonSidecarNotSupported = "SidecarNotSupported"
)

// AnnotationFlinkVersion on a pod overrides the Flink version the agent
// derives from the image tag, e.g. "1.20", "v2_3" or "2".
const AnnotationFlinkVersion = "nodeagent.flinkops.io/flink-version"

// entrypoint is the official Flink image's entrypoint script.
const entrypoint = "/docker-entrypoint.sh"

// Classification is what the agent makes of a container.
type Classification struct {
	Kind Kind
	// Mode is the entrypoint mode (standalone-job, jobmanager, taskmanager)
	// or the native mode (kubernetes-application, kubernetes-session,
	// kubernetes-taskmanager) when the container is started as the Flink
	// image would be; "" for a fake JobManager given its own flags.
	Mode flinkjvm.Mode
	// Args are the container arguments after the mode (for a native mode,
	// the words of the script's command line after the deployment target).
	Args []string
	// Message explains Unsupported.
	Message string
}

// Classify decides how to run container c with the (already $(VAR)-expanded)
// command and args. A container runs as Flink when it starts the official
// image's entrypoint in one of its Flink modes: command /docker-entrypoint.sh
// (or no command with an image named flink) and first argument
// standalone-job, jobmanager or taskmanager, or, in native mode, the args
// Flink's Kubernetes integration gives its containers: bash -c
// "kubernetes-jobmanager.sh kubernetes-application|kubernetes-session ..."
// or bash -c "kubernetes-taskmanager.sh ..." (flinkjvm.NativeInvocation). A
// container whose image name
// contains "fake-jobmanager" runs the fake JobManager: with the same Flink
// invocation it plays that role (a TaskManager is an idle process), otherwise
// its args are fake-jobmanager flags.
//
// A container of the busybox image (IsBusyboxImage) runs its command (Args:
// busyboxArgv) with busybox; the agent needs Config.Busybox for it.
//
// A container of the operator's image (IsOperatorImage) runs the operator
// with its args when its command is the image's entrypoint (none, or
// /flink-operator); the agent needs Config.OperatorBinary for it (see
// podWorker.newContainer).
func Classify(c *corev1.Container, command, args []string) Classification {
	if IsOperatorImage(c.Image) {
		if len(command) == 0 || (len(command) == 1 && command[0] == operatorEntrypoint) {
			return Classification{Kind: Operator, Args: args}
		}
		return Classification{Kind: Unsupported, Message: fmt.Sprintf(
			"image %q runs the operator with its own entrypoint only (no command, or [%q]; got command %q): "+
				"the local node agent runs the locally built operator binary for it, with the container's args",
			c.Image, operatorEntrypoint, command)}
	}
	if IsBusyboxImage(c.Image) {
		return Classification{Kind: Busybox, Args: busyboxArgv(command, args)}
	}
	if g := flinkjvm.SplitEndedJobGuard(args); g != nil {
		args, _ = g.Choose(nil) // without the container's variables: unset
	}
	mode, rest, isFlinkInvocation, err := flinkInvocation(c.Image, command, args)
	if err != nil {
		return Classification{Kind: Unsupported, Message: fmt.Sprintf("image %q: %v", c.Image, err)}
	}
	if strings.Contains(c.Image, "fake-jobmanager") {
		if isFlinkInvocation {
			return Classification{Kind: FakeJobManager, Mode: mode, Args: rest}
		}
		if len(command) > 0 {
			return Classification{Kind: Unsupported, Message: fmt.Sprintf(
				"image %q runs with its own entrypoint only (got command %q); give fake-jobmanager flags as args", c.Image, command)}
		}
		return Classification{Kind: FakeJobManager, Args: args}
	}
	if isFlinkInvocation {
		return Classification{Kind: Flink, Mode: mode, Args: rest}
	}
	msg := fmt.Sprintf("image %q with command %q and args %q cannot run on the local node agent: it runs Flink images "+
		"started as %s standalone-job|jobmanager|taskmanager or, in native mode, bash -c \"kubernetes-jobmanager.sh ...\" "+
		"or bash -c \"kubernetes-taskmanager.sh ...\" (as real Flink JVMs), images named *fake-jobmanager*, "+
		"the operator's image (.../%s, as the locally built operator) and busybox (as Debian's busybox-static) only",
		c.Image, command, firstN(args, 3), entrypoint, OperatorImage)
	return Classification{Kind: Unsupported, Message: msg}
}

// flinkInvocation recognizes the image's entrypoint started in a Flink mode
// (ok), or in native mode's pass-through bash -c form; err is set for a
// native invocation that cannot run (e.g. an unknown deployment target).
func flinkInvocation(image string, command, args []string) (mode flinkjvm.Mode, rest []string, ok bool, err error) {
	if len(args) == 0 {
		return "", nil, false, nil
	}
	switch {
	case len(command) == 1 && command[0] == entrypoint:
	case len(command) == 0 && (imageName(image) == "flink" || strings.Contains(image, "fake-jobmanager")):
	default:
		return "", nil, false, nil
	}
	if m, rest, ok, err := flinkjvm.NativeInvocation(args); ok {
		return m, rest, err == nil, err
	}
	m := flinkjvm.Mode(args[0])
	if m.MainClass() == "" || m.IsNative() {
		return "", nil, false, nil
	}
	return m, args[1:], true, nil
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "...")
	}
	return s
}

// IsOperatorImage reports whether image is the operator's: its repository
// (registry, tag and digest left out) is OperatorImage or ends with
// "/"+OperatorImage, e.g. ghcr.io/flinkops/flink-operator:v1.2 or
// localhost:5000/flinkops/flink-operator@sha256:....
func IsOperatorImage(image string) bool {
	repo, _ := splitImage(image)
	return repo == OperatorImage || strings.HasSuffix(repo, "/"+OperatorImage)
}

// imageName is the last path element of an image reference without tag or
// digest: "docker.io/library/flink:1.20" -> "flink".
func imageName(image string) string {
	repo, _ := splitImage(image)
	return repo[strings.LastIndexByte(repo, '/')+1:]
}

// splitImage splits an image reference into repository and tag ("" when
// there is none); a digest is dropped.
func splitImage(image string) (repo, tag string) {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	slash := strings.LastIndexByte(image, '/')
	if i := strings.LastIndexByte(image, ':'); i > slash {
		return image[:i], image[i+1:]
	}
	return image, ""
}

var leadingVersion = regexp.MustCompile(`^v?(\d+)(?:[._](\d+))?`)

// PinnedFlinkVersion maps the Flink version a pod asks for to the pinned
// version of e2e/flink that runs it: the annotation AnnotationFlinkVersion if
// set, else the image tag. Only the major version counts, so every 1.x tag
// (flink:1.20, flink:1.18.1-scala_2.12-java11) runs the pinned 1.x (1.20.5)
// and every 2.x tag (flink:2.0, flink:2.2-java17) the pinned 2.x (2.3.0). An
// image without a version tag (flink, flink:latest, flink:java17) runs the
// newest pinned version. It fails for a major version that is not pinned.
func PinnedFlinkVersion(pod *corev1.Pod, image string) (string, error) {
	want := pod.Annotations[AnnotationFlinkVersion]
	source := "annotation " + AnnotationFlinkVersion
	if want == "" {
		_, want = splitImage(image)
		source = "image " + image
	}
	versions := flinkjvm.Versions()
	m := leadingVersion.FindStringSubmatch(want)
	if m == nil {
		return versions[len(versions)-1], nil
	}
	major, _ := strconv.Atoi(m[1])
	var found string
	for _, v := range versions {
		if strings.HasPrefix(v, strconv.Itoa(major)+".") {
			found = v // versions are oldest first: keep the newest of the line
		}
	}
	if found == "" {
		return "", fmt.Errorf("%s asks for Flink %s; the local node agent runs only the pinned versions %s (by major version)",
			source, want, strings.Join(versions, ", "))
	}
	return found, nil
}

// fakeFlinkVersion is the version a fake JobManager reports: the annotation
// or the major.minor of the image tag when it looks like a Flink version,
// else the minor line of the newest pinned Flink.
func fakeFlinkVersion(pod *corev1.Pod, image string) string {
	want := pod.Annotations[AnnotationFlinkVersion]
	if want == "" {
		_, want = splitImage(image)
	}
	if m := leadingVersion.FindStringSubmatch(want); m != nil && m[2] != "" {
		return m[1] + "." + m[2]
	}
	versions := flinkjvm.Versions()
	v := versions[len(versions)-1]
	return v[:strings.LastIndexByte(v, '.')]
}
