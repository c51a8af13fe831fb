package nodeagent

// The kubelet's atomic writer (pkg/volume/util/atomic_writer.go), which
// writes configMap, secret, downwardAPI and projected volumes so that a
// process reading them sees one version of each file, never a half-written
// one, and a reader that resolves ..data once sees one version of all of
// them. A volume directory holds:
//
//	..2026_12_06_11_40_00.123456789   the files of the current version
//	..data -> ..2026_12_06_11_40_00.123456789
//	<key>  -> ..data/<key>            one symlink per top-level path
//
// An update writes the new version into a new timestamped directory, points
// a temporary symlink ..data_tmp at it and renames that over ..data (atomic),
// adds the symlinks of new paths, removes those of paths gone and then the
// old directory. Nothing is written when the content (data and modes) is
// the same.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// fileProjection is one file of an API data volume: its content and mode.
type fileProjection struct {
	Data []byte
	Mode os.FileMode
}

// defaultFileMode is the mode of a volume file when the pod spec sets none
// (the API server's default for defaultMode, 0644).
const defaultFileMode os.FileMode = 0o644

// fileMode is a mode of the pod spec (defaultMode, items[].mode), def when
// unset.
func fileMode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m) & os.ModePerm
}

// writeAtomicDir makes dir (created if missing) show exactly payload (slash
// paths relative to dir), the kubelet's way (see above). changed is false
// when dir already showed it and nothing was written.
func writeAtomicDir(dir string, payload map[string]fileProjection) (changed bool, err error) {
	for p := range payload {
		if err := validatePayloadPath(p); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	dataLink := filepath.Join(dir, dataDirName)
	oldTS, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	var old map[string]fileProjection
	if oldTS != "" {
		if old, err = readDataDir(filepath.Join(dir, oldTS)); err != nil {
			return false, fmt.Errorf("read %s: %w", oldTS, err)
		}
		if samePayload(old, payload) {
			// Repair symlinks a previous write left out (it failed midway).
			return false, createUserVisible(dir, payload)
		}
	}

	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := writePayload(tsDir, payload); err != nil {
		os.RemoveAll(tsDir)
		return false, err
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, os.ErrNotExist) {
		os.RemoveAll(tsDir)
		return false, err
	}
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		os.RemoveAll(tsDir)
		return false, err
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		os.Remove(tmpLink)
		os.RemoveAll(tsDir)
		return false, err
	}
	// From here on readers see the new version.
	if err := createUserVisible(dir, payload); err != nil {
		return true, err
	}
	keep := map[string]bool{}
	for p := range payload {
		keep[topLevel(p)] = true
	}
	for p := range old {
		top := topLevel(p)
		if keep[top] {
			continue
		}
		keep[top] = true // once
		visible := filepath.Join(dir, top)
		if fi, err := os.Lstat(visible); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if err := os.Remove(visible); err != nil {
				return true, err
			}
		}
	}
	// The old version, and any left by a write that failed midway.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true, err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() && strings.HasPrefix(name, "..") && name != filepath.Base(tsDir) {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

// validatePayloadPath rejects what the kubelet rejects: empty or absolute
// paths, ".." elements and a first element beginning with "..", which
// would clash with the writer's own entries.
func validatePayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("volume file path is empty")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("volume file path %q is absolute", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("volume file path %q begins with '..'", p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." || e == "" || e == "." {
			return fmt.Errorf("volume file path %q is not clean", p)
		}
	}
	return nil
}

func topLevel(p string) string {
	top, _, _ := strings.Cut(p, "/")
	return top
}

// writePayload writes the files into a new version's directory.
func writePayload(tsDir string, payload map[string]fileProjection) error {
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return err
	}
	for _, p := range sortedKeys(payload) {
		f := payload[p]
		file := filepath.Join(tsDir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, f.Data, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(file, f.Mode); err != nil { // not subject to the umask
			return err
		}
	}
	return nil
}

// createUserVisible adds the symlink <top> -> ..data/<top> of each top-level
// path that has none.
func createUserVisible(dir string, payload map[string]fileProjection) error {
	for p := range payload {
		top := topLevel(p)
		visible := filepath.Join(dir, top)
		if _, err := os.Lstat(visible); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := os.Symlink(path.Join(dataDirName, top), visible); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}

// readDataDir reads a version's files (regular files, by slash path).
func readDataDir(tsDir string) (map[string]fileProjection, error) {
	out := map[string]fileProjection{}
	err := filepath.WalkDir(tsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tsDir, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = fileProjection{Data: data, Mode: info.Mode().Perm()}
		return nil
	})
	return out, err
}

func samePayload(a, b map[string]fileProjection) bool {
	if len(a) != len(b) {
		return false
	}
	for p, fa := range a {
		fb, ok := b[p]
		if !ok || fa.Mode != fb.Mode || !bytes.Equal(fa.Data, fb.Data) {
			return false
		}
	}
	return true
}
