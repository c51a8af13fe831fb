package operator

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/flinkops/flink-operator/pkg/config"
)

// Lease timings by default as kube-controller-manager uses them (also the
// defaults of the kubernetes.operator.leader-election.* keys).
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// leaseTimings are the leader election's timings.
type leaseTimings struct {
	lease, renew, retry time.Duration
}

// leaderElectionTimings reads kubernetes.operator.leader-election.{lease-
// duration,renew-deadline,retry-period} and checks what client-go would
// otherwise refuse at start with a less helpful message: the lease outlives
// the renew deadline, which outlives a jittered retry.
func leaderElectionTimings(cfg config.Config) (leaseTimings, error) {
	t := leaseTimings{lease: leaseDuration, renew: renewDeadline, retry: retryPeriod}
	for _, k := range []struct {
		key string
		dst *time.Duration
	}{
		{config.KeyLeaderElectionLeaseDuration, &t.lease},
		{config.KeyLeaderElectionRenewDeadline, &t.renew},
		{config.KeyLeaderElectionRetryPeriod, &t.retry},
	} {
		d, err := cfg.Duration(k.key)
		switch {
		case err != nil:
			return t, err
		case d < 0:
			return t, fmt.Errorf("%s: %v must be positive", k.key, d)
		case d > 0:
			*k.dst = d
		}
	}
	if t.lease <= t.renew {
		return t, fmt.Errorf("%s (%v) must be greater than %s (%v)", config.KeyLeaderElectionLeaseDuration, t.lease, config.KeyLeaderElectionRenewDeadline, t.renew)
	}
	if float64(t.renew) <= leaderelection.JitterFactor*float64(t.retry) {
		return t, fmt.Errorf("%s (%v) must be greater than %v × %s (%v)", config.KeyLeaderElectionRenewDeadline, t.renew, leaderelection.JitterFactor, config.KeyLeaderElectionRetryPeriod, t.retry)
	}
	return t, nil
}

func metav1ObjectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
