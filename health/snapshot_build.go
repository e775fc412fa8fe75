package health

import "maps"

// NewSnapshot returns a snapshot holding states (keyed by fingerprint), for code that
// builds health views itself: tests, and tools that replay recorded states.
func NewSnapshot(gen uint64, states map[string]Status) *Snapshot {
	return &Snapshot{Gen: gen, states: maps.Clone(states)}
}
