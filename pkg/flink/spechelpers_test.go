package flink_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/internal/openapi"
)

// Helpers for the spec-driven tests: loading specs (fatal when missing, so
// CI can never silently skip them), a canned-answer server that records
// what the client sent, and a reflective comparison between a generated
// example body and what the client decoded from it.

func loadSpec(t *testing.T, version string) *openapi.Spec {
	t.Helper()
	spec, err := openapi.Load(version)
	if err != nil {
		t.Fatalf("cannot load the Flink %s REST spec: %v", version, err)
	}
	return spec
}

// captured is one request the canned server received.
type captured struct {
	Method, Path, Query, ContentType string
	Body                             []byte
}

// cannedServer answers every request with status and body and records
// the requests.
type cannedServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []captured
}

func newCannedServer(t *testing.T, status int, body []byte) *cannedServer {
	t.Helper()
	cs := &cannedServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		cs.mu.Lock()
		cs.requests = append(cs.requests, captured{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), b})
		cs.mu.Unlock()
		if body != nil {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *cannedServer) last(t *testing.T) captured {
	t.Helper()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.requests) == 0 {
		t.Fatal("the client sent no request")
	}
	return cs.requests[len(cs.requests)-1]
}

func newClient(t *testing.T, url string, v flink.Version) *flink.Client {
	t.Helper()
	c, err := flink.New(flink.Config{BaseURL: url, Version: v})
	if err != nil {
		t.Fatalf("flink.New: %v", err)
	}
	return c
}

// fieldCoverage records, per "GoType.jsonName", whether a client field was
// declared and whether any example body carried it.
type fieldCoverage struct {
	declared map[string]bool
	seen     map[string]bool
}

func newFieldCoverage() *fieldCoverage {
	return &fieldCoverage{declared: map[string]bool{}, seen: map[string]bool{}}
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// compare walks got (a decoded client value) alongside want (the example
// JSON decoded into any) and reports every field whose value differs.
func (fc *fieldCoverage) compare(got reflect.Value, want any, at string) []string {
	if want == nil {
		return nil
	}
	if got.Kind() == reflect.Pointer {
		if got.IsNil() {
			return []string{at + ": decoded as nil, example has a value"}
		}
		got = got.Elem()
	}
	if got.Type() == rawMessageType {
		if got.Len() == 0 {
			return []string{at + ": raw JSON not decoded"}
		}
		return nil
	}
	switch got.Kind() {
	case reflect.Struct:
		obj, ok := want.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: example is %T, client type is a struct", at, want)}
		}
		return fc.compareStruct(got, obj, at)
	case reflect.Slice:
		arr, ok := want.([]any)
		if !ok || got.Len() != len(arr) {
			return []string{fmt.Sprintf("%s: decoded %d elements, example has %v", at, got.Len(), want)}
		}
		var errs []string
		for i := range arr {
			errs = append(errs, fc.compare(got.Index(i), arr[i], fmt.Sprintf("%s[%d]", at, i))...)
		}
		return errs
	case reflect.Map:
		obj, ok := want.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: example is %T, client type is a map", at, want)}
		}
		var errs []string
		for k, v := range obj {
			mv := got.MapIndex(reflect.ValueOf(k).Convert(got.Type().Key()))
			if !mv.IsValid() {
				errs = append(errs, fmt.Sprintf("%s[%q]: missing", at, k))
				continue
			}
			errs = append(errs, fc.compare(mv, v, fmt.Sprintf("%s[%q]", at, k))...)
		}
		return errs
	case reflect.String:
		if s, ok := want.(string); !ok || got.String() != s {
			return []string{fmt.Sprintf("%s: decoded %q, example %v", at, got.String(), want)}
		}
	case reflect.Bool:
		if b, ok := want.(bool); !ok || got.Bool() != b {
			return []string{fmt.Sprintf("%s: decoded %v, example %v", at, got.Bool(), want)}
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		if f, ok := want.(float64); !ok || float64(got.Int()) != f {
			return []string{fmt.Sprintf("%s: decoded %d, example %v", at, got.Int(), want)}
		}
	case reflect.Float64:
		if f, ok := want.(float64); !ok || got.Float() != f {
			return []string{fmt.Sprintf("%s: decoded %v, example %v", at, got.Float(), want)}
		}
	default:
		return []string{fmt.Sprintf("%s: unsupported client kind %s", at, got.Kind())}
	}
	return nil
}

func (fc *fieldCoverage) compareStruct(got reflect.Value, obj map[string]any, at string) []string {
	var errs []string
	t := got.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			errs = append(errs, fc.compareStruct(got.Field(i), obj, at)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		key := t.Name() + "." + name
		fc.declared[key] = true
		v, present := obj[name]
		if !present {
			continue
		}
		fc.seen[key] = true
		errs = append(errs, fc.compare(got.Field(i), v, at+"."+name)...)
	}
	return errs
}

// unseen lists declared fields that no example ever carried.
func (fc *fieldCoverage) unseen(allowed map[string]string) []string {
	var out []string
	for k := range fc.declared {
		if !fc.seen[k] && allowed[k] == "" {
			out = append(out, k)
		}
	}
	return out
}
