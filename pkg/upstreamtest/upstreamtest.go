// Package upstreamtest holds, for tests only, the files published by the
// projects this one must stay compatible with: the Apache Flink Kubernetes
// Operator's CRDs, samples, e2e data and configuration reference, and
// Flink's REST OpenAPI specs. They are embedded from testdata/ (each folder
// has a SOURCES.md naming its origin and license), so every test reads them
// from inside the repository, whatever sits beside the checkout.
package upstreamtest

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
)

//go:embed testdata
var files embed.FS

// FS is testdata/ as a file system: crds/, examples/, e2e-data/, config/,
// flink-rest/.
func FS() fs.FS {
	sub, err := fs.Sub(files, "testdata")
	if err != nil {
		panic(err) // the embed pattern above guarantees the folder
	}
	return sub
}

// ReadFile reads one file, for example "crds/flinkdeployments.flink.apache.org-v1.yml".
func ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(FS(), name)
	if err != nil {
		return nil, fmt.Errorf("upstreamtest: %w", err)
	}
	return data, nil
}

// Glob lists the files of dir whose names match pattern ("*.yaml"), sorted,
// as paths ReadFile accepts. It fails when nothing matches, so a test never
// passes by reading no input.
func Glob(dir, pattern string) ([]string, error) {
	names, err := fs.Glob(FS(), path.Join(dir, pattern))
	if err != nil {
		return nil, fmt.Errorf("upstreamtest: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("upstreamtest: no %s in %s", pattern, dir)
	}
	sort.Strings(names)
	return names, nil
}
