package flink

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildFiles is everything build.sh needs, so that Ensure works from any binary
// and working directory. build.sh hashes these same files, so a build made from
// the repository and one from the embedded copy share the cache.
//
//go:embed build.sh versions.txt testjob/pom.xml testjob/src examples/pom.xml
var buildFiles embed.FS

// Dist is what build.sh produced for one pinned Flink version.
type Dist struct {
	Version    string   // pinned version, e.g. "2.3.0"
	Dir        string   // <cache>/flink/<version>
	Classpath  []string // the runtime jars (in ~/.m2), what flink-dist's lib/ would hold
	TestJobJar string   // org.flinkops.testjob.CountingJob compiled for this version
	// ExamplesDir is the image's /opt/flink/examples: streaming/ holds Flink's own
	// example jars (StateMachineExample.jar, WordCount.jar, TopSpeedWindowing.jar, ...).
	ExamplesDir string
}

// TestJobClass is the main class of Dist.TestJobJar (also its manifest Main-Class).
const TestJobClass = "org.flinkops.testjob.CountingJob"

// Jars of the image's /opt/flink/examples/streaming that Dist ships (see
// Dist.Example), and their entry classes (also in their manifests).
const (
	StateMachineExampleJar   = "StateMachineExample.jar"
	StateMachineExampleClass = "org.apache.flink.streaming.examples.statemachine.StateMachineExample"
	WordCountJar             = "WordCount.jar"
	WordCountClass           = "org.apache.flink.streaming.examples.wordcount.WordCount"
	TopSpeedWindowingJar     = "TopSpeedWindowing.jar"
	TopSpeedWindowingClass   = "org.apache.flink.streaming.examples.windowing.TopSpeedWindowing"
)

// Example is the host path of examples/streaming/<jar>, e.g. Example(WordCountJar).
func (d *Dist) Example(jar string) string {
	return filepath.Join(d.ExamplesDir, "streaming", jar)
}

// CacheDir is the root of the cache: $FLINKOP_CACHE_DIR, default
// ~/.cache/flink-operator. Flink artifacts live under its flink/ directory.
func CacheDir() string {
	if d := os.Getenv("FLINKOP_CACHE_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "flink-operator")
}

// Ensure returns the artifacts for version (anything VersionFor accepts), building
// them with build.sh (Maven) when the cache lacks them or is stale. When cached
// this takes a few milliseconds; the first build downloads ~200 MB into ~/.m2.
// Maven's output goes to os.Stderr.
func Ensure(ctx context.Context, version string) (*Dist, error) {
	v, err := VersionFor(version)
	if err != nil {
		return nil, err
	}
	src, err := os.MkdirTemp("", "flinkop-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(src)
	if err := extract(buildFiles, src); err != nil {
		return nil, fmt.Errorf("extract build files: %w", err)
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(src, "build.sh"), v)
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "FLINKOP_CACHE_DIR="+CacheDir())
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("e2e/flink/build.sh %s: %w", v, err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return loadDist(v, lines[len(lines)-1])
}

func loadDist(version, dir string) (*Dist, error) {
	cp, err := os.ReadFile(filepath.Join(dir, "classpath.txt"))
	if err != nil {
		return nil, err
	}
	d := &Dist{
		Version:     version,
		Dir:         dir,
		Classpath:   strings.Split(strings.TrimSpace(string(cp)), string(os.PathListSeparator)),
		TestJobJar:  filepath.Join(dir, "testjob.jar"),
		ExamplesDir: filepath.Join(dir, "examples"),
	}
	for _, f := range []string{d.TestJobJar, d.Example(StateMachineExampleJar)} {
		if _, err := os.Stat(f); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func extract(fsys fs.FS, dst string) error {
	return fs.WalkDir(fsys, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(path))
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o755)
	})
}
