package fakejm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Session-job submission: /jars/upload, /jars/:id/run, DELETE /jars/:id.
// Uploaded jars are kept in memory only; the fake never runs user code.

type jarRecord struct {
	JarInfo
	uploaded time.Time
}

// JarInfo describes an uploaded jar.
type JarInfo struct {
	ID          string // "<uuid>_<name>", the last element of the reported filename
	Name        string // the original file name
	FieldName   string // the multipart field it came in (Flink's docs use "jarfile")
	ContentType string // the part's Content-Type
	Size        int
}

// Jars lists the uploaded jars.
func (s *Server) Jars() []JarInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]JarInfo, 0, len(s.jars))
	for _, id := range sortedKeys(s.jars) {
		out = append(out, s.jars[id].JarInfo)
	}
	return out
}

func newUUID() string {
	h := flink.NewID()
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// uploadedFile is one file part of a multipart upload.
type uploadedFile struct {
	field, name, contentType string
	size                     int
}

// fileParts extracts the file parts of a multipart body.
func fileParts(in *inbound) ([]uploadedFile, error) {
	mediaType, params, err := mime.ParseMediaType(in.r.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mediaType, "multipart/") {
		return nil, nil // Flink passes non-multipart requests through: zero files
	}
	mr := multipart.NewReader(bytes.NewReader(in.body), params["boundary"])
	var files []uploadedFile
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		n, err := io.Copy(io.Discard, part)
		if err != nil {
			return nil, err
		}
		if part.FileName() != "" {
			files = append(files, uploadedFile{field: part.FormName(), name: part.FileName(),
				contentType: part.Header.Get("Content-Type"), size: int(n)})
		}
	}
}

func (s *Server) uploadJar(in *inbound) reply {
	files, err := fileParts(in)
	if err != nil {
		return internalError("org.apache.flink.shaded.netty4.io.netty.handler.codec.http.multipart.HttpPostRequestDecoder$ErrorDataDecoderException: " + err.Error())
	}
	if len(files) != 1 {
		return restError(http.StatusBadRequest, fmt.Sprintf("Exactly 1 file must be sent, received %d.", len(files)))
	}
	f := files[0]
	if !strings.HasSuffix(f.name, ".jar") {
		return restError(http.StatusBadRequest, "Only Jar files are allowed.")
	}
	id := newUUID() + "_" + f.name
	s.jars[id] = &jarRecord{JarInfo: JarInfo{ID: id, Name: f.name, FieldName: f.field, ContentType: f.contentType, Size: f.size}, uploaded: s.now()}
	return okReply(map[string]any{"filename": s.uploadDir + "/" + id, "status": "success"})
}

func (s *Server) listJars(in *inbound) reply {
	files := []any{}
	for _, id := range sortedKeys(s.jars) {
		j := s.jars[id]
		files = append(files, map[string]any{"id": id, "name": j.Name, "uploaded": j.uploaded.UnixMilli(), "entry": []any{}})
	}
	return okReply(map[string]any{"address": "http://" + in.r.Host, "files": files})
}

func (s *Server) deleteJar(in *inbound) reply {
	id := in.pathValue("jarid")
	if _, found := s.jars[id]; !found {
		return restError(http.StatusBadRequest, fmt.Sprintf("File %s does not exist in %s.", id, s.uploadDir))
	}
	delete(s.jars, id)
	return okReply(map[string]any{})
}

// runJar "runs" the jar's main(): it submits one job, honouring a fixed
// job id and a savepoint to restore from.
func (s *Server) runJar(in *inbound) reply {
	jarID := in.pathValue("jarid")
	jar, found := s.jars[jarID]
	if !found {
		return restError(http.StatusBadRequest, fmt.Sprintf("Jar file %s/%s does not exist", s.uploadDir, jarID))
	}
	b, errRep := parseBody(in.body, jarRunSchema, s.opts.Version)
	if errRep != nil {
		return *errRep
	}
	q := in.r.URL.Query()
	entryClass := firstNonEmpty(b.str("entryClass"), q.Get("entry-class"))
	savepointPath := firstNonEmpty(b.str("savepointPath"), q.Get("savepointPath"))
	parallelism := b.integer("parallelism")
	if !b.has("parallelism") {
		parallelism, _ = strconv.Atoi(q.Get("parallelism"))
	}
	jobID := b.str("jobId")
	if jobID != "" {
		if _, dup := s.jobs[jobID]; dup {
			return restError(http.StatusBadRequest, "Could not execute application.",
				"java.util.concurrent.CompletionException: org.apache.flink.util.FlinkRuntimeException: Could not execute application.",
				"org.apache.flink.util.FlinkRuntimeException: Could not execute application.",
				"org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: Failed to execute job '"+jar.Name+"'.",
				"org.apache.flink.runtime.client.DuplicateJobSubmissionException: Job has already been submitted.")
		}
	}
	name := entryClass
	if name == "" {
		name = strings.TrimSuffix(jar.Name, ".jar")
	}
	retention := b.stringMap("flinkConfiguration")["execution.checkpointing.externalized-checkpoint-retention"]
	j, err := s.newJob(JobSpec{ID: jobID, Name: name, Parallelism: parallelism, RestoredFrom: savepointPath, CheckpointRetention: retention})
	if err != nil {
		return internalError("java.lang.IllegalArgumentException: " + err.Error())
	}
	j.jarID = jarID
	s.startJob(j)
	return okReply(map[string]any{"jobid": j.id})
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
