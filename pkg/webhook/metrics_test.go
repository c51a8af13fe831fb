package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/metrics/metricstest"
)

// Every answered review is counted by step, operation, kind and decision:
// the figure that shows which writes the API server sends to the webhook.
func TestWebhookRequestsCounted(t *testing.T) {
	v := newValidator(newLookup(application("team-a", "orders")), config.Defaults())
	srv := httptest.NewServer(v.Handler())
	defer srv.Close()
	series := func(step, op, allowed string) string {
		return `flink_operator_webhook_requests_total{allowed="` + allowed + `",kind="FlinkStateSnapshot",operation="` + op + `",step="` + step + `"}`
	}
	before, err := metricstest.Samples(metrics.Registry)
	if err != nil {
		t.Fatal(err)
	}
	send := func(path string, req *admissionv1.AdmissionRequest) {
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(reviewBody(req)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	ok := savepoint("team-a", "sp", deploymentRef("orders"))
	missing := savepoint("team-a", "sp2", deploymentRef("no-such-job"))
	send(ValidatePath, request(admissionv1.Create, ok, nil))
	send(ValidatePath, request(admissionv1.Create, missing, nil))
	send(MutatePath, request(admissionv1.Create, ok, nil))
	send(MutatePath, request(admissionv1.Update, ok, ok))
	after, err := metricstest.Samples(metrics.Registry)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]float64{
		series("validate", "CREATE", "true"):  1,
		series("validate", "CREATE", "false"): 1,
		series("mutate", "CREATE", "true"):    1,
		series("mutate", "UPDATE", "true"):    1,
		series("validate", "UPDATE", "true"):  0,
	} {
		if got := after[s] - before[s]; got != want {
			t.Errorf("%s grew by %v, want %v", s, got, want)
		}
	}
}
