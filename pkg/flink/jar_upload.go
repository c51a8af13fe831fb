package flink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
)

// jarContentType is what Flink's docs ask for on the file part; some HTTP
// stacks otherwise send application/octet-stream.
const jarContentType = "application/x-java-archive"

// UploadJar uploads a jar (POST /jars/upload, multipart field "jarfile").
// name is the file name Flink stores the jar under and must end in ".jar";
// size is the content length, or -1 when unknown (the upload is then sent
// chunked). The content is streamed, never held in memory.
func (c *Client) UploadJar(ctx context.Context, name string, content io.Reader, size int64) (*JarUpload, error) {
	const p = "/jars/upload"
	name = filepath.Base(name)
	if !strings.HasSuffix(name, ".jar") {
		return nil, &Error{Kind: KindBadRequest, Method: http.MethodPost, Path: p,
			Message: fmt.Sprintf("jar name %q must end in .jar (Flink accepts only jar files)", name)}
	}
	// Build the part header and the closing boundary up front so that the
	// total length is known whenever the content size is.
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="jarfile"; filename=%q`, name))
	h.Set("Content-Type", jarContentType)
	if _, err := mw.CreatePart(h); err != nil {
		return nil, &Error{Kind: KindBadRequest, Method: http.MethodPost, Path: p, Message: "cannot build multipart body", Err: err}
	}
	headLen := head.Len()
	if err := mw.Close(); err != nil {
		return nil, &Error{Kind: KindBadRequest, Method: http.MethodPost, Path: p, Message: "cannot build multipart body", Err: err}
	}
	all := head.Bytes()
	// Close wrote "\r\n--boundary--\r\n", which is exactly what must follow
	// the content.
	prefix, trailer := all[:headLen], all[headLen:]

	body := io.MultiReader(bytes.NewReader(prefix), content, bytes.NewReader(trailer))
	length := int64(-1)
	if size >= 0 {
		length = int64(len(prefix)) + size + int64(len(trailer))
	}
	var out JarUpload
	err := c.do(ctx, call{method: http.MethodPost, path: p, body: body, contentLength: length,
		contentType: mw.FormDataContentType(), timeout: c.submitTimeout, out: &out})
	if err != nil {
		return nil, err
	}
	if out.Filename == "" {
		return nil, unexpected(http.MethodPost, p, fmt.Errorf("upload answer has no filename"))
	}
	return &out, nil
}

// UploadJarFile uploads the jar at localPath.
func (c *Client) UploadJarFile(ctx context.Context, localPath string) (*JarUpload, error) {
	f, err := os.Open(localPath)
	if err != nil {
		return nil, &Error{Kind: KindBadRequest, Method: http.MethodPost, Path: "/jars/upload", Message: "cannot open jar", Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &Error{Kind: KindBadRequest, Method: http.MethodPost, Path: "/jars/upload", Message: "cannot stat jar", Err: err}
	}
	return c.UploadJar(ctx, filepath.Base(localPath), f, st.Size())
}
