package flink

import (
	"crypto/rand"
	"encoding/hex"
)

// Flink's JobID, TriggerId, ResourceID and JobVertexID are all 16 random
// bytes rendered as 32 lowercase hex characters. The client validates ids
// before putting them into a URL so that a malformed id is a clear local
// error rather than a confusing 404 from Flink's router.

// NewID returns a fresh random 32-character lowercase hex id, valid as a
// Flink JobID or TriggerId.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ panics
		// internally instead), so this is unreachable in practice.
		panic("flink: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// NewTriggerID returns a fresh trigger id. Callers that may retry a trigger
// (for example across operator restarts) should create the id once, persist
// it, and pass it on every attempt: Flink then runs the operation only once.
func NewTriggerID() string { return NewID() }

// IsValidID reports whether s has Flink's id format ([0-9a-f]{32}).
func IsValidID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
