package fakejm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Snapshots (savepoints and checkpoints) are real directories with a
// _metadata file when they live on the local file system, so tests can
// check what Flink would leave behind and disposal really deletes. Remote
// schemes (s3://, hdfs://, ...) are only remembered in memory.

// Metadata is the content of a _metadata file written by the fake. Real
// Flink metadata is a binary format; the fake keeps Flink's magic number
// and version header and follows it with JSON, which is enough to restore
// from and easy to inspect.
type Metadata struct {
	JobID        string `json:"jobId"`
	CheckpointID int64  `json:"checkpointId"`
	Savepoint    bool   `json:"savepoint"`
	FormatType   string `json:"formatType,omitempty"`
	Timestamp    int64  `json:"timestamp"`
}

const (
	metadataFile    = "_metadata"
	metadataMagic   = 0x4960672d // Flink's Checkpoints.HEADER_MAGIC_NUMBER
	metadataVersion = 3
)

// snapshotRecord is what the fake remembers about a snapshot it created.
type snapshotRecord struct {
	meta    Metadata
	written bool // a directory with _metadata exists (or existed)
}

// localPath maps a snapshot URI to a local path. ok is false for remote
// schemes; err is set for relative paths, which Flink cannot resolve.
func localPath(uri string) (p string, ok bool, err error) {
	switch {
	case strings.HasPrefix(uri, "file://"):
		p = strings.TrimPrefix(uri, "file://")
		if !strings.HasPrefix(p, "/") { // file://host/path: ignore the host
			if i := strings.Index(p, "/"); i >= 0 {
				p = p[i:]
			} else {
				p = "/"
			}
		}
	case strings.HasPrefix(uri, "file:"):
		p = strings.TrimPrefix(uri, "file:")
	case strings.Contains(uri, "://"):
		return "", false, nil
	default:
		p = uri
	}
	if !filepath.IsAbs(p) {
		return "", true, fmt.Errorf("java.lang.IllegalArgumentException: Path %q is not absolute", uri)
	}
	return filepath.Clean(p), true, nil
}

// normalizeLocation turns any spelling of a snapshot path into the form
// the fake reports ("file:/abs/dir" or the remote URI without a trailing
// slash), dropping a trailing "/_metadata".
func normalizeLocation(uri string) string {
	uri = strings.TrimSuffix(strings.TrimSuffix(uri, "/"), "/"+metadataFile)
	if p, ok, err := localPath(uri); ok && err == nil {
		return "file:" + p
	}
	return uri
}

// encodeMetadata renders a _metadata file.
func encodeMetadata(m Metadata) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint32(metadataMagic))
	_ = binary.Write(&b, binary.BigEndian, uint32(metadataVersion))
	_ = json.NewEncoder(&b).Encode(m)
	return b.Bytes()
}

// ReadMetadata reads the _metadata of the snapshot at pathOrURI (a
// directory, its _metadata file, or a file: URI of either).
func ReadMetadata(pathOrURI string) (Metadata, error) {
	p, ok, err := localPath(strings.TrimSuffix(pathOrURI, "/"+metadataFile))
	if err != nil {
		return Metadata{}, err
	}
	if !ok {
		return Metadata{}, fmt.Errorf("fakejm: %s is not on the local file system", pathOrURI)
	}
	raw, err := os.ReadFile(filepath.Join(p, metadataFile))
	if err != nil {
		return Metadata{}, err
	}
	if len(raw) < 8 || binary.BigEndian.Uint32(raw[:4]) != metadataMagic {
		return Metadata{}, fmt.Errorf("fakejm: %s: not a checkpoint metadata file", pathOrURI)
	}
	var m Metadata
	if err := json.Unmarshal(raw[8:], &m); err != nil {
		return Metadata{}, fmt.Errorf("fakejm: %s: %w", pathOrURI, err)
	}
	return m, nil
}

// writeSnapshot creates dir/name with a _metadata file (local dirs) and
// records it; it returns the location Flink would report.
func (s *Server) writeSnapshot(dirURI, name string, m Metadata) (string, error) {
	dir, local, err := localPath(strings.TrimSuffix(dirURI, "/"))
	if err != nil {
		return "", err
	}
	if !local {
		loc := strings.TrimSuffix(dirURI, "/") + "/" + name
		s.snapshots[loc] = snapshotRecord{meta: m}
		return loc, nil
	}
	full := filepath.Join(dir, name)
	if err := os.MkdirAll(full, 0o755); err != nil {
		return "", fmt.Errorf("java.io.IOException: Failed to create savepoint directory at %s: %v", full, err)
	}
	if err := os.WriteFile(filepath.Join(full, metadataFile), encodeMetadata(m), 0o644); err != nil {
		return "", fmt.Errorf("java.io.IOException: Could not write metadata to %s: %v", full, err)
	}
	loc := "file:" + full
	s.snapshots[loc] = snapshotRecord{meta: m, written: true}
	return loc, nil
}

// recordSyntheticSnapshot remembers a snapshot that is reported but not
// written (checkpoints without Options.CheckpointDir).
func (s *Server) recordSyntheticSnapshot(loc string, m Metadata) {
	s.snapshots[loc] = snapshotRecord{meta: m}
}

var chkName = regexp.MustCompile(`chk-(\d+)$`)

// lookupSnapshot finds what the fake knows about a snapshot path, the way
// Flink resolves a restore path: it must exist (for local paths: on disk).
func (s *Server) lookupSnapshot(uri string) (Metadata, error) {
	loc := normalizeLocation(uri)
	if rec, ok := s.snapshots[loc]; ok && !rec.written {
		return rec.meta, nil
	}
	p, local, err := localPath(loc)
	if err != nil {
		return Metadata{}, err
	}
	if !local {
		// Unknown remote snapshot: trust it, guessing the id from its name.
		return guessMetadata(loc), nil
	}
	if _, err := os.Stat(filepath.Join(p, metadataFile)); err != nil {
		return Metadata{}, fmt.Errorf("java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory '%s' on file system 'file'.", uri)
	}
	if m, err := ReadMetadata(loc); err == nil {
		return m, nil
	}
	return guessMetadata(loc), nil // someone else's _metadata: accept it
}

func guessMetadata(loc string) Metadata {
	m := Metadata{Savepoint: !chkName.MatchString(loc)}
	if sm := chkName.FindStringSubmatch(loc); sm != nil {
		m.CheckpointID, _ = strconv.ParseInt(sm[1], 10, 64)
	}
	return m
}

// restoreFrom makes j start from the snapshot at uri.
func (s *Server) restoreFrom(j *job, uri string) error {
	m, err := s.lookupSnapshot(uri)
	if err != nil {
		return err
	}
	j.restored = &restoredStat{
		id:               m.CheckpointID,
		restoreTimestamp: s.now().UnixMilli(),
		isSavepoint:      m.Savepoint,
		externalPath:     normalizeLocation(uri),
	}
	j.counts.restored++
	if m.CheckpointID >= j.nextCheckpointID {
		j.nextCheckpointID = m.CheckpointID + 1
	}
	return nil
}

// disposeSnapshot deletes the snapshot at uri, failing like Flink when it
// does not exist.
func (s *Server) disposeSnapshot(uri string) error {
	loc := normalizeLocation(uri)
	rec, known := s.snapshots[loc]
	p, local, err := localPath(loc)
	switch {
	case err != nil:
		return err
	case known && !rec.written, !local:
		delete(s.snapshots, loc)
	default:
		if _, err := os.Stat(filepath.Join(p, metadataFile)); err != nil {
			return fmt.Errorf("java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory '%s' on file system 'file'.", uri)
		}
		if err := os.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("java.io.IOException: Could not dispose savepoint %s: %v", uri, err)
		}
		delete(s.snapshots, loc)
	}
	for _, j := range s.jobs {
		markDiscarded(j, loc)
	}
	return nil
}

// savepointDirName is Flink's "savepoint-<6 chars of job id>-<12 hex>".
func savepointDirName(jobID string) string {
	return "savepoint-" + jobID[:6] + "-" + flink.NewID()[:12]
}

// dropCheckpointsOnCancel deletes the checkpoints of a cancelled job that
// does not retain them on cancellation, as Flink's checkpoint store does
// at the job's shutdown: their files are gone (a restore from one fails
// with Flink's "Cannot find checkpoint or savepoint") although the
// statistics still list them (discarded). Savepoints are never deleted.
func (s *Server) dropCheckpointsOnCancel(j *job) {
	if j.retention == RetainOnCancellation {
		return
	}
	seen := map[string]bool{}
	for _, st := range append([]*checkpointStat{j.latestCompleted}, j.history...) {
		if st == nil || st.isSavepoint || st.status != flink.CheckpointStatsCompleted || st.externalPath == "" || seen[st.externalPath] {
			continue
		}
		seen[st.externalPath] = true
		loc := normalizeLocation(st.externalPath)
		if p, local, err := localPath(loc); err == nil && local {
			_ = os.RemoveAll(p)
		}
		delete(s.snapshots, loc)
		markDiscarded(j, loc)
	}
}
