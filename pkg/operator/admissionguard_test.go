package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

func webhookConfig(policy admissionregistrationv1.FailurePolicyType, resources ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "flink-operator"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:          "validate.flink.apache.org",
			FailurePolicy: &policy,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"flink.apache.org"}, APIVersions: []string{"v1beta1"}, Resources: resources},
			}},
		}},
	}
}

func TestAdmissionGuard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vwc     *admissionregistrationv1.ValidatingWebhookConfiguration
		wantErr string
	}{
		{"registered", webhookConfig(admissionregistrationv1.Fail, "flinkdeployments", "flinkstatesnapshots"), ""},
		{"wildcard", webhookConfig(admissionregistrationv1.Fail, "*"), ""},
		{"missing", nil, "not found"},
		{"ignore policy", webhookConfig(admissionregistrationv1.Ignore, "flinkstatesnapshots"), "no webhook with failurePolicy Fail"},
		{"snapshots not covered", webhookConfig(admissionregistrationv1.Fail, "flinkdeployments"), "no webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := kubefake.NewSimpleClientset()
			if tc.vwc != nil {
				_, _ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), tc.vwc, metav1.CreateOptions{})
			}
			err := newAdmissionGuard(kube, "flink-operator", testingclock.NewFakeClock(time.Now())).Check(context.Background())
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// The answer is cached for admissionGuardTTL, then read again.
func TestAdmissionGuardCaches(t *testing.T) {
	kube := kubefake.NewSimpleClientset()
	clk := testingclock.NewFakeClock(time.Now())
	g := newAdmissionGuard(kube, "flink-operator", clk)
	if g.Check(context.Background()) == nil {
		t.Fatal("no configuration, but guarded")
	}
	_, _ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(),
		webhookConfig(admissionregistrationv1.Fail, "flinkstatesnapshots"), metav1.CreateOptions{})
	if g.Check(context.Background()) == nil {
		t.Fatal("cached answer not used")
	}
	clk.Step(admissionGuardTTL)
	if err := g.Check(context.Background()); err != nil {
		t.Fatalf("after the TTL: %v", err)
	}
	if n := len(kube.Actions()); n != 3 { // create + two gets
		t.Errorf("%d API calls, want 3", n)
	}
}
