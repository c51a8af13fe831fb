// Package snapshots holds the pure rules about FlinkStateSnapshots that the
// controllers share: labels, defaults, retry backoff, poll pacing, timestamps
// and what counts as in flight. Nothing here does I/O: functions take objects
// and a time and return decisions, so they are tested with tables.
package snapshotrules
