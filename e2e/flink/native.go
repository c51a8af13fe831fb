package flink

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Native Kubernetes mode. Flink's own Kubernetes integration starts its
// containers through the image's entrypoint in pass-through mode, with a bash
// wrapper (KubernetesUtils.getStartCommandWithBashWrapper):
//
//	/docker-entrypoint.sh bash -c "kubernetes-jobmanager.sh kubernetes-application|kubernetes-session <args>"
//	/docker-entrypoint.sh bash -c "kubernetes-taskmanager.sh <dynamic properties> <resource -D options>"
//
// the first from CmdJobManagerDecorator (the JobManager Deployment, which the
// operator builds the same way), the second from CmdTaskManagerDecorator (the
// TaskManager pods Flink's resource manager creates). NativeInvocation turns
// such arguments into a Mode and the script's arguments, which Prepare runs as
// the scripts would.

// NativeInvocation recognizes the container arguments of a native Flink
// container, ["bash", "-c", "<script> <args>"] with script
// kubernetes-jobmanager.sh (followed by the deployment target) or
// kubernetes-taskmanager.sh (a bare name, as Flink writes it, or a path to
// the image's bin/), and returns the mode and the script's arguments, split as
// bash would split them (quotes and backslashes; Flink single-quotes the
// values of its dynamic properties). ok is false when args are not such an
// invocation; err is set when they are but cannot be run (an unknown target,
// or a shell construct other than quoting, which would need a real shell).
func NativeInvocation(args []string) (mode Mode, rest []string, ok bool, err error) {
	if len(args) != 3 || path.Base(args[0]) != "bash" || args[1] != "-c" {
		return "", nil, false, nil
	}
	words, err := splitShellWords(args[2])
	if len(words) == 0 {
		return "", nil, false, nil
	}
	script := words[0]
	if dir := path.Dir(script); dir != "." && dir != ImageFlinkHome+"/bin" {
		return "", nil, false, nil
	}
	switch path.Base(script) {
	case nativeJobManagerScript:
		if err != nil {
			return "", nil, true, fmt.Errorf("%s: %w", nativeJobManagerScript, err)
		}
		if len(words) < 2 {
			return "", nil, true, fmt.Errorf("%s without a deployment target (want %s or %s)", nativeJobManagerScript, KubernetesApplication, KubernetesSession)
		}
		switch m := Mode(words[1]); m {
		case KubernetesApplication, KubernetesSession:
			return m, words[2:], true, nil
		default:
			return "", nil, true, fmt.Errorf("%s: unknown deployment target %q (want %s or %s)", nativeJobManagerScript, words[1], KubernetesApplication, KubernetesSession)
		}
	case nativeTaskManagerScript:
		if err != nil {
			return "", nil, true, fmt.Errorf("%s: %w", nativeTaskManagerScript, err)
		}
		return KubernetesTaskManager, words[1:], true, nil
	}
	return "", nil, false, nil
}

const (
	nativeJobManagerScript  = "kubernetes-jobmanager.sh"
	nativeTaskManagerScript = "kubernetes-taskmanager.sh"
)

// TaskManagerJVMMemoryEnv is the variable in which Flink's resource manager
// passes a native TaskManager its JVM memory flags (-Xmx, -Xms,
// -XX:MaxDirectMemorySize, -XX:MaxMetaspaceSize), which
// kubernetes-taskmanager.sh adds to the JVM's arguments instead of running
// BashJavaUtils (InitTaskManagerDecorator, Constants.ENV_TM_JVM_MEM_OPTS).
const TaskManagerJVMMemoryEnv = "FLINK_TM_JVM_MEM_OPTS"

var errShellConstruct = errors.New("needs a shell")

// splitShellWords splits s into words as bash would for a simple command
// whose words are literal: blanks separate words; '...' is literal, "..."
// keeps \" \\ \$ \` escapes, a backslash outside quotes escapes the next
// character. Expansions ($, `), redirections, pipes, lists and globs are not
// supported (errShellConstruct): the words found so far are returned with
// the error. Glob characters are kept literally (bash keeps a pattern that
// matches nothing; Flink quotes every value that could hold one).
func splitShellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return words, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				d := s[i]
				if d == '"' {
					closed = true
					break
				}
				if d == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				}
				if d == '$' || d == '`' {
					return words, fmt.Errorf("%q %w (expansion in double quotes)", s, errShellConstruct)
				}
				cur.WriteByte(d)
			}
			if !closed {
				return words, fmt.Errorf("unterminated \" in %q", s)
			}
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					cur.WriteByte(s[i])
					inWord = true
				}
			}
		case strings.IndexByte("$`|&;<>()", c) >= 0 || (!inWord && (c == '#' || c == '~')):
			return words, fmt.Errorf("%q %w (%c)", s, errShellConstruct, c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// EndedJobGuard is the operator's guard before a native application
// JobManager's script (pkg/cluster endedjob.go):
//
//	if [ "${VAR:-}" = "<token>" ]; then echo "<message>"; exec <then>; fi; exec <else>
//
// bash runs <then> (the session entrypoint) when the variable holds the
// JobManager Deployment's token, else <else> (the application).
type EndedJobGuard struct {
	Var, Token, Message string
	// Then and Else are native invocations (NativeInvocation's args).
	Then, Else []string
}

var endedJobGuard = regexp.MustCompile(`^if \[ "\$\{([A-Za-z_][A-Za-z0-9_]*):-\}" = "([0-9a-z-]+)" \]; then echo "([^"$` + "`" + `\\]*)"; exec ([^;]*); fi; exec ([^;]*)$`)

// SplitEndedJobGuard recognizes args guarded so (nil when they are not).
func SplitEndedJobGuard(args []string) *EndedJobGuard {
	if len(args) != 3 || path.Base(args[0]) != "bash" || args[1] != "-c" {
		return nil
	}
	m := endedJobGuard.FindStringSubmatch(args[2])
	if m == nil {
		return nil
	}
	return &EndedJobGuard{Var: m[1], Token: m[2], Message: m[3],
		Then: []string{args[0], args[1], m[4]}, Else: []string{args[0], args[1], m[5]}}
}

// Choose is what bash runs given the container's variables.
func (g *EndedJobGuard) Choose(env map[string]string) (args []string, ended bool) {
	if env[g.Var] == g.Token {
		return g.Then, true
	}
	return g.Else, false
}
