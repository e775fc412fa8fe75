package healthroute

import (
	"testing"

	"github.com/healthroute/healthroute/health"
)

// max_probes follows the running blocks: a reload's value applies once the old
// blocks release, and without one the bound is fitted to the checks.
func TestRegistryMaxProbesOnReload(t *testing.T) {
	r := &registry{}
	old := &blockConfig{MaxInFlight: 50}
	s := r.acquire(old)
	if n := s.MaxInFlightNow(); n != 50 {
		t.Fatalf("bound %d; want max_probes 50", n)
	}
	// A reload: the new block starts, then the old one shuts down.
	reloaded := &blockConfig{MaxInFlight: 700}
	if r.acquire(reloaded) != s {
		t.Fatal("a reload must keep the scheduler")
	}
	if n := s.MaxInFlightNow(); n != 700 {
		t.Errorf("bound %d with blocks setting 50 and 700; want the largest", n)
	}
	r.release(old)
	if n := s.MaxInFlightNow(); n != 700 {
		t.Errorf("bound %d after a reload to max_probes 700; want 700", n)
	}
	// Another reload drops max_probes: the automatic bound applies.
	unset := &blockConfig{}
	r.acquire(unset)
	r.release(reloaded)
	if n, want := s.MaxInFlightNow(), health.AutoMaxInFlight(0, 0); n > want || n < health.MinMaxInFlight/4 {
		t.Errorf("bound %d after max_probes was removed; want the automatic one (%d, less under a low file limit)", n, want)
	}
	r.release(unset)
	if r.scheduler() != nil {
		t.Error("the last release left the scheduler")
	}
}
