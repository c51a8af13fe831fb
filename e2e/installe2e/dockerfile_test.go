package installe2e

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The image cannot be built here (no Docker engine). What the Dockerfile
// promises is checked against what `go build` makes instead: its build
// stage's exact command produces a static binary (no interpreter, no shared
// libraries: it runs on distroless/static), the build context it copies
// holds every package the binary is made of, and the user it runs as is
// the one the Deployment manifest requires.
func TestDockerfileBuildsWhatTheManifestRuns(t *testing.T) {
	root := repoRoot(t)
	df := readDockerfile(t, filepath.Join(root, "Dockerfile"))

	build := regexp.MustCompile(`CGO_ENABLED=0 GOOS=\$\{TARGETOS\} GOARCH=\$\{TARGETARCH\}\s+go build (.*) -o /out/flink-operator (\./cmd/flink-operator)`).FindStringSubmatch(df.run)
	if build == nil {
		t.Fatalf("the build stage's go build command is not the static one this test checks: %q", df.run)
	}
	if df.user != "65532:65532" || !strings.Contains(df.lastFrom, "distroless/static") || !strings.HasSuffix(df.lastFrom, ":nonroot") {
		t.Errorf("final stage FROM %q USER %q, want distroless/static nonroot as 65532:65532", df.lastFrom, df.user)
	}
	manifest, err := os.ReadFile(filepath.Join(root, "manifests/base/deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"runAsUser: 65532", "runAsGroup: 65532", "runAsNonRoot: true", "readOnlyRootFilesystem: true"} {
		if !strings.Contains(string(manifest), want) {
			t.Errorf("manifests/base/deployment.yaml lacks %q, which the image's user and read-only use rely on", want)
		}
	}

	// Every package of the main module the binary imports is in a
	// directory the Dockerfile copies into the build stage.
	list := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.ImportPath}} {{.Dir}}{{end}}{{end}}", build[2])
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, dir, _ := strings.Cut(line, " ")
		rel, err := filepath.Rel(root, dir)
		if err != nil || !df.copies(rel) {
			t.Errorf("package %s (%s) is not in the Dockerfile's build context (COPY %v)", pkg, rel, df.copied)
		}
	}

	// The stage's command, run here, makes a static linux binary.
	bin := filepath.Join(t.TempDir(), "flink-operator")
	args := append([]string{"build"}, shellFields(build[1])...)
	args = append(args, "-o", bin, build[2])
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a dynamic loader; distroless/static has none")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	if f.Section(".symtab") != nil {
		t.Errorf("the binary keeps its symbol table: -ldflags -s was not applied")
	}
	st, _ := os.Stat(bin)
	t.Logf("static binary: %.1f MiB", float64(st.Size())/(1<<20))
	// It starts on its own (nothing from the build machine is needed to
	// print its usage).
	help := exec.Command(bin, "--help")
	help.Env = []string{}
	if out, err := help.CombinedOutput(); err != nil || !strings.Contains(string(out), "Usage: flink-operator") {
		t.Errorf("--help: %v\n%s", err, out)
	}
}

type dockerfile struct {
	run      string   // the build stage's go build RUN, continuation lines joined
	copied   []string // source paths of COPY in the build stage
	lastFrom string
	user     string
}

func (d dockerfile) copies(rel string) bool {
	for _, c := range d.copied {
		c = strings.TrimSuffix(c, "/")
		if rel == c || strings.HasPrefix(rel, c+"/") {
			return true
		}
	}
	return false
}

func readDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var d dockerfile
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	for _, l := range lines {
		word, rest, _ := strings.Cut(l, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			d.lastFrom = strings.Fields(strings.ReplaceAll(rest, "--platform=$BUILDPLATFORM", ""))[0]
		case "COPY":
			if strings.HasPrefix(rest, "--from") {
				continue
			}
			fields := strings.Fields(rest)
			d.copied = append(d.copied, fields[:len(fields)-1]...)
		case "RUN":
			if strings.Contains(rest, "go build") {
				d.run = rest
			}
		case "USER":
			d.user = strings.TrimSpace(rest)
		}
	}
	return d
}

// shellFields splits like the shell for what the Dockerfile uses: words
// separated by blanks, double quotes grouping (-ldflags "-s -w").
func shellFields(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s", dir)
	}
	return dir
}
