package health

// NewSnapshot returns a snapshot holding states (keyed by fingerprint), for code that
// builds health views itself: tests, and tools that replay recorded states.
func NewSnapshot(gen uint64, states map[string]Status) *Snapshot {
	s := &Snapshot{Gen: gen}
	for fp, st := range states {
		i := shardOf(fp)
		if s.shards[i] == nil {
			s.shards[i] = &shard{m: map[string]Status{}}
		}
		s.shards[i].m[fp] = st
	}
	return s
}
