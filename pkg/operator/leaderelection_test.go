package operator

import (
	"strings"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/config"
)

func TestLeaderElectionTimings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     map[string]string
		want    leaseTimings
		wantErr string
	}{
		{name: "defaults", want: leaseTimings{15 * time.Second, 10 * time.Second, 2 * time.Second}},
		{name: "configured", set: map[string]string{
			config.KeyLeaderElectionLeaseDuration: "60 s",
			config.KeyLeaderElectionRenewDeadline: "40 s",
			config.KeyLeaderElectionRetryPeriod:   "5 s",
		}, want: leaseTimings{60 * time.Second, 40 * time.Second, 5 * time.Second}},
		{name: "lease not longer than renew", set: map[string]string{config.KeyLeaderElectionLeaseDuration: "10 s"},
			wantErr: "lease-duration (10s) must be greater than kubernetes.operator.leader-election.renew-deadline (10s)"},
		{name: "retry too long for renew", set: map[string]string{config.KeyLeaderElectionRetryPeriod: "9 s"},
			wantErr: "renew-deadline (10s) must be greater than 1.2 × kubernetes.operator.leader-election.retry-period (9s)"},
		{name: "unreadable", set: map[string]string{config.KeyLeaderElectionRetryPeriod: "soon"},
			wantErr: "retry-period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			for k, v := range tc.set {
				cfg[k] = v
			}
			got, err := leaderElectionTimings(cfg)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err %v, want one containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("unexpected error %v", err)
			case got != tc.want:
				t.Errorf("timings %+v, want %+v", got, tc.want)
			}
		})
	}
}
