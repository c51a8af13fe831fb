// Package bluegreen reconciles FlinkBlueGreenDeployments (upstream's
// fourth resource): each version of spec.template runs as a child
// FlinkDeployment, <name>-blue or <name>-green, owned by the blue/green
// deployment; the FlinkDeployment controller runs the children like any
// other deployment. This controller only creates, patches, suspends and
// deletes children, the transition savepoint (a FlinkStateSnapshot) and
// the Ingress of spec.ingress.
//
// The state machine is upstream's (docs/bluegreen.md):
//
//	INITIALIZING_BLUE → ACTIVE_BLUE
//	ACTIVE_BLUE → [SAVEPOINTING_BLUE] → TRANSITIONING_TO_GREEN → ACTIVE_GREEN
//	ACTIVE_GREEN → [SAVEPOINTING_GREEN] → TRANSITIONING_TO_BLUE → ACTIVE_BLUE
//
// The status is the write-ahead log, as the job engine's is: a sync
// computes the next status and the actions it implies, writes the status
// (once), and only then acts. Every action is idempotent given the status
// (children and the snapshot have fixed names, creates that meet
// AlreadyExists and deletes that meet NotFound are done), so a crash at
// any point is finished by the next sync:
//
//   - the transition savepoint's name is in status.transitionSnapshot
//     before it is created; a crash between the two creates it then;
//   - the new child is created after TRANSITIONING_TO_* is written, from
//     the snapshot's path; a crash before the create creates it then;
//   - the old child is deleted only while the new one is ready, and
//     ACTIVE_* is written once the old one is gone; a transition whose old
//     child is gone always finishes (the new child is then the only one,
//     and is never suspended by an abort);
//   - an abort writes ACTIVE_<old> with the error first, then suspends the
//     new child; an ACTIVE sync suspends an inactive child that still runs.
//
// The transition savepoint is a FlinkStateSnapshot of the active child
// (trigger type UPGRADE, name <child>-savepoint-upgrade-<millis>): the
// snapshot controller triggers, tracks and retries it; it is protected from
// history cleanup while status.transitionSnapshot names it (the cache's
// snapshot-reference index), and its path is the new child's
// spec.job.initialSavepointPath (without the "file:" scheme, as upstream).
package bluegreen
