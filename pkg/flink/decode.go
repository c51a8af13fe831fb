package flink

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// maxResponseBody caps a successful response. Checkpoint statistics of a
// job with many operators are the largest answers the client reads and stay
// far below this; the cap only protects the operator from a runaway peer.
const maxResponseBody = 64 << 20

var errEmptyBody = errors.New("empty response body")

// decodeJSON decodes one JSON value from r into out. Unknown fields are
// ignored on purpose: Flink adds response fields in most releases and an
// old client must keep working against a newer JobManager.
func decodeJSON(r io.Reader, out any) error {
	dec := json.NewDecoder(io.LimitReader(r, maxResponseBody))
	if err := dec.Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			return errEmptyBody
		}
		return err
	}
	return nil
}

// errorBody is Flink's ErrorResponseBody.
type errorBody struct {
	Errors []string `json:"errors"`
}

// parseErrorBody extracts Flink's errors[] from a failed response. Bodies
// that are not Flink's JSON (a proxy's page, a plain-text 405) are kept as
// one trimmed message so the caller still sees what came back.
func parseErrorBody(body []byte) []string {
	var eb errorBody
	if err := json.Unmarshal(body, &eb); err == nil && len(eb.Errors) > 0 {
		return eb.Errors
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		return nil
	}
	const max = 2 << 10
	if len(text) > max {
		text = text[:max] + "…"
	}
	return []string{text}
}
