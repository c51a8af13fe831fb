package benchscale

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// write is one request of the audit log.
type write struct {
	At          time.Time
	Verb        string
	Resource    string // resource[/subresource]
	Namespace   string
	Name        string
	Code        int
	Username    string
	RequestTime time.Time
}

type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// auditLog follows the API server's audit log (JSON lines) as it grows.
type auditLog struct {
	path string

	mu      sync.Mutex
	off     int64
	partial []byte
	writes  []write
}

// poll reads what was appended since the last poll.
func (a *auditLog) poll() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.Open(a.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(a.off, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	a.off += int64(len(b))
	b = append(a.partial, b...)
	last := bytes.LastIndexByte(b, '\n')
	if last < 0 {
		a.partial = b
		return nil
	}
	a.partial = append([]byte(nil), b[last+1:]...)
	for _, line := range bytes.Split(b[:last], []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		w := write{At: e.StageTimestamp, RequestTime: e.RequestReceivedTimestamp, Verb: e.Verb, Username: e.User.Username}
		if e.ObjectRef != nil {
			w.Resource, w.Namespace, w.Name = e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name
			if e.ObjectRef.Subresource != "" {
				w.Resource += "/" + e.ObjectRef.Subresource
			}
		}
		if e.ResponseStatus != nil {
			w.Code = e.ResponseStatus.Code
		}
		a.writes = append(a.writes, w)
	}
	return nil
}

// mark is the number of writes read so far: since(mark) returns the later.
func (a *auditLog) mark() int {
	_ = a.poll()
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.writes)
}

func (a *auditLog) since(mark int) []write {
	_ = a.poll()
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]write(nil), a.writes[mark:]...)
}

// lastWrite is the time of the newest write (zero without any).
func (a *auditLog) lastWrite() (time.Time, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.writes) == 0 {
		return time.Time{}, 0
	}
	return a.writes[len(a.writes)-1].At, len(a.writes)
}

// Object classes writes are attributed to, by the name of the object
// written (an event by the name of the object it is about).
const (
	classDeployment = "FlinkDeployment"
	classSnapshot   = "FlinkStateSnapshot"
	classOther      = "other"
)

// classify attributes a write to a FlinkDeployment or a snapshot of the
// load by name: snapshots are named snapshotPrefix…, deployments
// deploymentPrefix… (and the objects the operator makes for a deployment
// carry its name); an event is named <object>.<hex>.
func classify(w write) string {
	name := w.Name
	if w.Resource == "events" {
		if i := strings.LastIndexByte(name, '.'); i > 0 {
			name = name[:i]
		}
	}
	switch {
	case strings.HasPrefix(name, snapshotPrefix):
		return classSnapshot
	case strings.Contains(name, deploymentPrefix):
		return classDeployment
	}
	return classOther
}

// WriteRow is a count of writes of one verb on one resource, attributed to
// one class of object.
type WriteRow struct {
	Object    string  `json:"object"`
	Resource  string  `json:"resource"`
	Verb      string  `json:"verb"`
	Count     int     `json:"count"`
	PerObject float64 `json:"perObject,omitempty"`
	// Failed counts the writes answered with an error (HTTP code >= 400).
	Failed int `json:"failed,omitempty"`
}

// tally counts writes by class, resource and verb; perObject divides by
// the number of objects of the class (when known).
func tally(ws []write, objects map[string]int) []WriteRow {
	type key struct{ class, res, verb string }
	counts := map[key]*WriteRow{}
	for _, w := range ws {
		k := key{classify(w), w.Resource, w.Verb}
		r := counts[k]
		if r == nil {
			r = &WriteRow{Object: k.class, Resource: k.res, Verb: k.verb}
			counts[k] = r
		}
		r.Count++
		if w.Code >= 400 {
			r.Failed++
		}
	}
	rows := make([]WriteRow, 0, len(counts))
	for _, r := range counts {
		if n := objects[r.Object]; n > 0 {
			r.PerObject = float64(r.Count) / float64(n)
		}
		rows = append(rows, *r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Verb < b.Verb
	})
	return rows
}

// perClass sums rows by object class.
func perClass(rows []WriteRow) map[string]int {
	m := map[string]int{}
	for _, r := range rows {
		m[r.Object] += r.Count
	}
	return m
}
