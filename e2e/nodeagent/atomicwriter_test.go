package nodeagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// versionDirs are the ..<timestamp> directories in dir.
func versionDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "..") {
			out = append(out, e.Name())
		}
	}
	return out
}

// visible lists dir's entries other than the writer's own, each with its
// symlink target.
func visible(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Errorf("%s is no symlink: %v", e.Name(), err)
		}
		out[e.Name()] = link
	}
	return out
}

func checkFiles(t *testing.T, dir string, want map[string]fileProjection) {
	t.Helper()
	for p, f := range want {
		file := filepath.Join(dir, filepath.FromSlash(p))
		b, err := os.ReadFile(file)
		if err != nil || string(b) != string(f.Data) {
			t.Errorf("%s = %q, %v; want %q", p, b, err, f.Data)
			continue
		}
		if st, err := os.Stat(file); err != nil || st.Mode().Perm() != f.Mode {
			t.Errorf("%s: mode %v, %v; want %v", p, st.Mode().Perm(), err, f.Mode)
		}
	}
}

// TestAtomicWriter: the kubelet's layout (..data -> ..<timestamp>, one
// symlink per top-level path), modes, no write without a change, an update
// that changes, adds and removes paths and removes the old version.
func TestAtomicWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	v1 := map[string]fileProjection{
		"config.yaml":  {Data: []byte("a: 1\n"), Mode: 0o644},
		"sub/secret":   {Data: []byte("s3cret"), Mode: 0o600},
		"sub/deeper/x": {Data: []byte("x"), Mode: 0o755},
	}
	changed, err := writeAtomicDir(dir, v1)
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, %v", changed, err)
	}
	ts1 := versionDirs(t, dir)
	if len(ts1) != 1 || !strings.HasPrefix(ts1[0], "..20") {
		t.Fatalf("version directories %v, want one ..<timestamp>", ts1)
	}
	if link, err := os.Readlink(filepath.Join(dir, "..data")); err != nil || link != ts1[0] {
		t.Errorf("..data -> %q, %v; want %s", link, err, ts1[0])
	}
	if got, want := visible(t, dir), map[string]string{"config.yaml": "..data/config.yaml", "sub": "..data/sub"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	checkFiles(t, dir, v1)

	// The same content: nothing written.
	if changed, err := writeAtomicDir(dir, v1); err != nil || changed {
		t.Errorf("same payload: changed %v, %v", changed, err)
	}
	if ts := versionDirs(t, dir); fmt.Sprint(ts) != fmt.Sprint(ts1) {
		t.Errorf("same payload: versions %v, want %v", ts, ts1)
	}

	// A mode alone is a change.
	v1["config.yaml"] = fileProjection{Data: v1["config.yaml"].Data, Mode: 0o400}
	if changed, err := writeAtomicDir(dir, v1); err != nil || !changed {
		t.Errorf("mode changed: changed %v, %v", changed, err)
	}
	checkFiles(t, dir, v1)

	// Changed, added and removed paths; only the new version is left.
	v2 := map[string]fileProjection{
		"config.yaml": {Data: []byte("a: 2\n"), Mode: 0o644},
		"new":         {Data: []byte("n"), Mode: 0o644},
	}
	if changed, err := writeAtomicDir(dir, v2); err != nil || !changed {
		t.Fatalf("update: changed %v, %v", changed, err)
	}
	checkFiles(t, dir, v2)
	if got, want := visible(t, dir), map[string]string{"config.yaml": "..data/config.yaml", "new": "..data/new"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entries after update %v, want %v (sub removed)", got, want)
	}
	ts2 := versionDirs(t, dir)
	if len(ts2) != 1 || ts2[0] == ts1[0] {
		t.Errorf("versions after update %v (before %v): want one, new", ts2, ts1)
	}
	if _, err := os.Lstat(filepath.Join(dir, "..data_tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("..data_tmp left: %v", err)
	}

	// Everything removed (an optional ConfigMap deleted): an empty volume.
	if changed, err := writeAtomicDir(dir, nil); err != nil || !changed {
		t.Fatalf("empty: changed %v, %v", changed, err)
	}
	if got := visible(t, dir); len(got) != 0 {
		t.Errorf("entries of an empty volume: %v", got)
	}

	for _, bad := range []string{"", "..data", "..x/y", "a/../b", "/abs", "a//b"} {
		if _, err := writeAtomicDir(dir, map[string]fileProjection{bad: {Data: []byte("x"), Mode: 0o644}}); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
}

// TestAtomicWriterConsistentView: while versions are written one after the
// other, a reader of a key's path never fails nor sees a partial file, and
// a reader that resolves ..data once sees all files of one version (or, at
// worst, files missing as the old version is removed, never a mix).
func TestAtomicWriterConsistentView(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	payload := func(n int) map[string]fileProjection {
		v := []byte(strings.Repeat(strconv.Itoa(n)+"\n", 1000))
		return map[string]fileProjection{"a": {Data: v, Mode: 0o644}, "b": {Data: v, Mode: 0o644}, "d/c": {Data: v, Mode: 0o644}}
	}
	if _, err := writeAtomicDir(dir, payload(0)); err != nil {
		t.Fatal(err)
	}
	const versions = 200
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	whole := func(b []byte) (int, bool) {
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(lines) != 1000 {
			return 0, false
		}
		for _, l := range lines[1:] {
			if l != lines[0] {
				return 0, false
			}
		}
		n, err := strconv.Atoi(lines[0])
		return n, err == nil
	}
	reads, snapshots := 0, 0
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, key := range []string{"a", "d/c"} {
					b, err := os.ReadFile(filepath.Join(dir, key))
					if err != nil {
						report("read %s: %v", key, err)
					} else if _, ok := whole(b); !ok {
						report("%s: partial content %q…", key, b[:min(len(b), 20)])
					}
				}
				ts, err := os.Readlink(filepath.Join(dir, "..data"))
				if err != nil {
					report("readlink ..data: %v", err)
					continue
				}
				seen := map[int]bool{}
				complete := true
				for _, key := range []string{"a", "b", "d/c"} {
					b, err := os.ReadFile(filepath.Join(dir, ts, key))
					if errors.Is(err, os.ErrNotExist) {
						complete = false // the old version is being removed
						continue
					}
					n, ok := whole(b)
					if err != nil || !ok {
						report("%s/%s: %v, partial", ts, key, err)
						continue
					}
					seen[n] = true
				}
				if len(seen) > 1 {
					report("one resolution of ..data (%s) showed versions %v", ts, seen)
				}
				mu.Lock()
				reads++
				if complete {
					snapshots++
				}
				mu.Unlock()
			}
		}()
	}
	for n := 1; n <= versions; n++ {
		if _, err := writeAtomicDir(dir, payload(n)); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d versions written; %d reads, %d of them complete snapshots", versions, reads, snapshots)
	if ts := versionDirs(t, dir); len(ts) != 1 {
		t.Errorf("versions left: %v", ts)
	}
	checkFiles(t, dir, payload(versions))
}

// TestAPIVolumeUpdates: a configMap volume (items with a mode, defaultMode)
// and a secret volume follow their objects: a changed value, a key removed
// (listed as an item of an optional ConfigMap), the object deleted (optional:
// the volume empties; not optional: an error, the files stay).
func TestAPIVolumeUpdates(t *testing.T) {
	objs := fakeObjects{
		cms: map[string]*corev1.ConfigMap{"ns/conf": {Data: map[string]string{"config.yaml": "v: 1\n", "extra": "e", "other": "o"}}},
		secrets: map[string]*corev1.Secret{"ns/creds": {Data: map[string][]byte{
			"password": []byte("one"), "user": []byte("me")}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
			DefaultMode:          ptr.To[int32](0o640),
			Optional:             ptr.To(true),
			Items: []corev1.KeyToPath{
				{Key: "config.yaml", Path: "config.yaml"},
				{Key: "extra", Path: "nested/extra", Mode: ptr.To[int32](0o600)},
			},
		}}},
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
	}}}
	podDir := t.TempDir()
	if _, err := prepareVolumes(pod, podDir, "", "", podFields{pod: pod}, objs); err != nil {
		t.Fatal(err)
	}
	conf, creds := volumeDir(podDir, "conf"), volumeDir(podDir, "creds")
	checkFiles(t, conf, map[string]fileProjection{
		"config.yaml": {Data: []byte("v: 1\n"), Mode: 0o640}, "nested/extra": {Data: []byte("e"), Mode: 0o600}})
	checkFiles(t, creds, map[string]fileProjection{"password": {Data: []byte("one"), Mode: 0o644}, "user": {Data: []byte("me"), Mode: 0o644}})
	if _, err := os.Lstat(filepath.Join(conf, "other")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("key other not listed in items but written: %v", err)
	}

	update := func(name string) bool {
		t.Helper()
		for i := range pod.Spec.Volumes {
			if v := &pod.Spec.Volumes[i]; v.Name == name {
				changed, err := writeAPIVolume(pod, v, volumeDir(podDir, name), podFields{pod: pod}, objs)
				if err != nil {
					t.Fatal(err)
				}
				return changed
			}
		}
		t.Fatalf("no volume %s", name)
		return false
	}
	if update("conf") || update("creds") {
		t.Error("unchanged objects: a volume was rewritten")
	}
	objs.cms["ns/conf"] = &corev1.ConfigMap{Data: map[string]string{"config.yaml": "v: 2\n"}} // extra removed
	delete(objs.secrets["ns/creds"].Data, "user")
	objs.secrets["ns/creds"].Data["password"] = []byte("two")
	if !update("conf") || !update("creds") {
		t.Error("changed objects: a volume was not rewritten")
	}
	checkFiles(t, conf, map[string]fileProjection{"config.yaml": {Data: []byte("v: 2\n"), Mode: 0o640}})
	checkFiles(t, creds, map[string]fileProjection{"password": {Data: []byte("two"), Mode: 0o644}})
	for _, gone := range []string{filepath.Join(conf, "nested"), filepath.Join(creds, "user")} {
		if _, err := os.Lstat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after its key was removed: %v", gone, err)
		}
	}
	for _, d := range []string{conf, creds} {
		if ts := versionDirs(t, d); len(ts) != 1 {
			t.Errorf("%s: versions %v, want one", d, ts)
		}
	}

	// Deleted: the optional ConfigMap's volume empties; the Secret (not
	// optional) is an error and its files stay.
	delete(objs.cms, "ns/conf")
	delete(objs.secrets, "ns/creds")
	if !update("conf") {
		t.Error("optional ConfigMap deleted: volume not rewritten")
	}
	if got := visible(t, conf); len(got) != 0 {
		t.Errorf("optional ConfigMap deleted: entries %v", got)
	}
	if _, err := writeAPIVolume(pod, &pod.Spec.Volumes[1], creds, podFields{pod: pod}, objs); err == nil {
		t.Error("Secret deleted: no error")
	}
	checkFiles(t, creds, map[string]fileProjection{"password": {Data: []byte("two"), Mode: 0o644}})

	refs := map[string][]string{}
	for i := range pod.Spec.Volumes {
		for _, ref := range [][2]string{{"configmap", "conf"}, {"secret", "creds"}, {"configmap", "creds"}} {
			if volumeRefersTo(&pod.Spec.Volumes[i], ref[0], ref[1]) {
				refs[pod.Spec.Volumes[i].Name] = append(refs[pod.Spec.Volumes[i].Name], ref[0]+"/"+ref[1])
			}
		}
	}
	for _, v := range refs {
		sort.Strings(v)
	}
	if fmt.Sprint(refs) != "map[conf:[configmap/conf] creds:[secret/creds]]" {
		t.Errorf("volumeRefersTo: %v", refs)
	}
}
