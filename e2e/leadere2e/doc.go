// Package leadere2e tests leader election end to end (issue 20, item 8): two
// operator replicas, separate processes of the real binary with leader
// election on (kubernetes.operator.leader-election.* from --config, short
// timings: 8 s lease, 6 s renew deadline, 1 s retry), against the local
// provider's real API server (e2e/framework), with a real Flink job run by
// the node agent. Each replica reaches the API server through its own
// recording reverse proxy, as the same user; that is how the test knows
// which replica sent which write.
//
// It proves, on one job (upgradeMode savepoint, the newest pinned Flink):
//
//   - kill -9 of the leader while a savepoint is IN_PROGRESS (two more
//     queued behind it): the standby holds the Lease within the lease
//     duration plus the retry periods it needs to notice (measured, bounded
//     by 8 s + 3 × 1 s), completes all three, and Flink wrote exactly one
//     savepoint directory per COMPLETED snapshot, none unnamed;
//   - kill -9 of the new leader once the upgrade's stop-with-savepoint intent
//     is recorded (savepointInfo.triggerId): a restarted replica takes over
//     and finishes the upgrade with one UPGRADE snapshot, one more savepoint,
//     the new job restored from it, and Flink's job list holds only the job
//     id the operator recorded (no job started twice);
//   - a standby never writes anything but the Lease before it leads;
//   - a replica that loses its lease stops acting at once: the leader is
//     paused (SIGSTOP) past its lease, the standby takes over; then, with the
//     new leader paused for a moment so it cannot win the race, a new
//     snapshot is created and the old leader resumed (SIGCONT). Without the
//     fence in pkg/operator (leaseFence) the old leader's renew loop would
//     keep its controllers running for another renew deadline and it would
//     write that snapshot's intent; here it sends no write at all and exits
//     at once, and the new leader completes the snapshot with one savepoint.
//
// The takeover times are logged at the end. With FLINKOP_E2E_PROVIDER=kind it
// skips: it signals operator processes.
//
// Run it with
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 30m -v ./e2e/leadere2e/
package leadere2e
