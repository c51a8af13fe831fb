package workers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Writes mark the sync whose context they carry; reads and requests
// outside a sync mark nothing.
func TestMarkingTransportMarksWrites(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	client := &http.Client{Transport: MarkingTransport(http.DefaultTransport)}
	for method, want := range map[string]bool{
		http.MethodGet: false, http.MethodHead: false, http.MethodOptions: false,
		http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true,
	} {
		ctx, mark := withChangeMark(context.Background())
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := mark.changed.Load(); got != want {
			t.Errorf("%s marked the sync changed=%v, want %v", method, got, want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	if resp, err := client.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
}
