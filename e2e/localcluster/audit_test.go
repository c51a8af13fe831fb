package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestAuditOptions(t *testing.T) {
	var none *AuditOptions
	if args, err := none.apiserverArgs(t.TempDir()); err != nil || args != nil {
		t.Errorf("no audit options: %v, %v", args, err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "logs", "audit.log")
	args, err := (&AuditOptions{Path: log}).apiserverArgs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(args, "--audit-log-path="+log) || !slices.Contains(args, "--audit-policy-file="+filepath.Join(dir, "audit-policy.yaml")) {
		t.Errorf("args = %v", args)
	}
	b, err := os.ReadFile(filepath.Join(dir, "audit-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		OmitStages []string `json:"omitStages"`
		Rules      []struct {
			Level string   `json:"level"`
			Users []string `json:"users"`
			Verbs []string `json:"verbs"`
		} `json:"rules"`
	}
	if err := yaml.UnmarshalStrict(b, &policy); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	if policy.Kind != "Policy" || len(policy.Rules) != 2 || policy.Rules[0].Level != "Metadata" ||
		!slices.Equal(policy.Rules[0].Users, []string{OperatorUser}) || !slices.Equal(policy.Rules[0].Verbs, DefaultAuditVerbs) ||
		policy.Rules[1].Level != "None" || !slices.Equal(policy.OmitStages, []string{"RequestReceived"}) {
		t.Errorf("policy:\n%s", b)
	}
	if _, err := (&AuditOptions{}).apiserverArgs(dir); err == nil || !strings.Contains(err.Error(), "path") {
		t.Errorf("no path: %v", err)
	}
}
