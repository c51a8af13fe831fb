package installe2e

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

// webhookMatchConditions: the API server sends the webhook only what it
// acts on (manifests/base/webhook.yaml's matchConditions). The operator's
// own label and finalizer writes, and a user's label, never reach it; a
// forged review stamp still reaches the mutating step, which removes it; a
// spec change still reaches the validating step, which refuses a bad one.
func (s *suite) webhookMatchConditions() {
	t := s.t
	updates := func(step string) map[string]float64 {
		return s.webhookRequests(step, "UPDATE", "FlinkStateSnapshot")
	}
	// So far no user updated a snapshot; the operator wrote the labels and
	// finalizers of the manual and the upgrade savepoints.
	if v, m := updates("validate"), updates("mutate"); total(v) != 0 || total(m) != 0 {
		t.Errorf("the operator's metadata writes reached the webhook: validate %v, mutate %v", v, m)
	}
	if c := s.webhookRequests("validate", "CREATE", "FlinkStateSnapshot"); total(c) == 0 {
		t.Errorf("no snapshot CREATE counted by the webhook (%v): the metric or the scrape is broken", c)
	}

	s.apply(snapshotYAML(teamB, "match", job, "", "false"))
	s.waitSnapshot(teamB, "match")
	s.kubectl("label", "flinkstatesnapshot", "match", "-n", teamB, "e2e.flinkops.io/checked=yes")
	if v, m := updates("validate"), updates("mutate"); total(v) != 0 || total(m) != 0 {
		t.Errorf("a label change reached the webhook: validate %v, mutate %v", v, m)
	}

	s.kubectl("annotate", "flinkstatesnapshot", "match", "-n", teamB, reviewstamp.Annotation+"=forged")
	if got := strings.TrimSpace(s.kubectl("get", "flinkstatesnapshot", "match", "-n", teamB,
		"-o", `jsonpath={.metadata.annotations.flinkops\.io/cross-namespace-review}`)); got != "" {
		t.Errorf("a forged review stamp survived admission: %q", got)
	}
	if m := updates("mutate"); m["true"] != 1 {
		t.Errorf("mutating step saw %v UPDATEs, want the one adding a stamp", m)
	}

	s.kubectl("delete", "flinkstatesnapshot", "match", "-n", teamB)

	// A spec change still reaches the validating step (a snapshot's spec is
	// immutable by the CRD's own rule, which the API server applies before
	// validating webhooks, so a FlinkDeployment shows it).
	s.apply(deploymentYAML(teamB, "match", s.image, s.flinkV, "", 1, "stateless", "suspended", ""))
	before := s.webhookRequests("validate", "UPDATE", "FlinkDeployment")
	s.kubectl("label", "flinkdeployment", "match", "-n", teamB, "e2e.flinkops.io/checked=yes")
	_, err := s.Kubectl("patch", "flinkdeployment", "match", "-n", teamB, "--type=merge", "-p", `{"spec":{"image":""}}`)
	if err == nil || !strings.Contains(err.Error(), "spec.image is required") {
		t.Errorf("FlinkDeployment without an image: %v, want the webhook's refusal", err)
	}
	after := s.webhookRequests("validate", "UPDATE", "FlinkDeployment")
	if after["true"] != before["true"] || after["false"] != before["false"]+1 {
		t.Errorf("validating step saw FlinkDeployment UPDATEs %v before, %v after a label and a refused spec change; want only the refusal counted", before, after)
	}
	s.kubectl("delete", "flinkdeployment", "match", "-n", teamB)
	t.Logf("webhook match conditions: metadata-only updates skipped, stamp and spec changes reviewed")
}

// webhookRequests reads flink_operator_webhook_requests_total for one step,
// operation and kind from the operator's /metrics, by its allowed label.
func (s *suite) webhookRequests(step, operation, kind string) map[string]float64 {
	t := s.t
	t.Helper()
	var out map[string]float64
	s.WaitFor(t, 30*time.Second, "the operator's /metrics", func() (bool, string) {
		resp, err := http.Get(s.metrics)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, resp.Status
		}
		out = map[string]float64{}
		want := []string{`step="` + step + `"`, `operation="` + operation + `"`, `kind="` + kind + `"`}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			series, value, ok := strings.Cut(sc.Text(), " ")
			labels, isMetric := strings.CutPrefix(series, "flink_operator_webhook_requests_total{")
			if !ok || !isMetric || !containsAll(labels, want) {
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return false, fmt.Sprintf("bad sample %q", sc.Text())
			}
			_, allowed, _ := strings.Cut(labels, `allowed="`)
			allowed, _, _ = strings.Cut(allowed, `"`)
			out[allowed] += v
		}
		return sc.Err() == nil, fmt.Sprint(sc.Err())
	})
	return out
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func total(m map[string]float64) float64 {
	var sum float64
	for _, v := range m {
		sum += v
	}
	return sum
}
