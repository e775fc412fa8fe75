package operator

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/healthroute/healthroute/view"
)

// dataBlock is a block as plain data: one check, a snapshot generation the test
// moves, and a cost in (fake) time for reading its checks.
type dataBlock struct {
	api   string
	gen   atomic.Uint64
	cost  time.Duration
	reads atomic.Int64 // Checks calls: view builds
}

func (b *dataBlock) Zones() []string           { return []string{"example.org."} }
func (b *dataBlock) HasCheck(name string) bool { return name == "c1" }
func (b *dataBlock) Checks() []view.Check {
	b.reads.Add(1)
	time.Sleep(b.cost)
	return []view.Check{{Name: "c1", Healthy: b.gen.Load()%2 == 0}}
}
func (b *dataBlock) Records() []view.Record                   { return nil }
func (b *dataBlock) Explain(q view.Question) view.Explanation { return view.Explanation{} }
func (b *dataBlock) SetOverrides(map[string]bool)             {}
func (b *dataBlock) APIAddr() string                          { return b.api }
func (b *dataBlock) Generation() uint64                       { return b.gen.Load() }

// TestViewsRebuild: views are built once per state; a health change rebuilds them
// once the last build is healthShare times its cost old, an override at once, and
// views of an unchanged state once they are detailShare times its cost old, for
// their probe counts.
func TestViewsRebuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op := &Operator{}
		b := &dataBlock{api: "127.0.0.1:8053", cost: 10 * time.Millisecond}
		op.Register(b)
		op.Register(&dataBlock{api: "127.0.0.1:9053"}) // another API's block: never read here
		s := newServer(op, b.api, "")
		v1 := s.current()
		if b.reads.Load() != 1 || v1.took != b.cost || len(v1.checks) != 1 {
			t.Fatalf("first views: %d builds, took %s, %v", b.reads.Load(), v1.took, v1.checks)
		}
		for range 100 {
			s.current()
		}
		if n := b.reads.Load(); n != 1 {
			t.Errorf("100 requests in one state: %d builds, want 1", n)
		}

		b.gen.Add(1) // health changed
		if v := s.current(); v != v1 || b.reads.Load() != 1 {
			t.Error("rebuilt sooner than healthShare times the last build's cost")
		}
		time.Sleep(healthShare * b.cost)
		v2 := s.current()
		if b.reads.Load() != 2 || v2.etag == v1.etag || v2.checks[0].Healthy {
			t.Errorf("after %s: %d builds, etag %s (was %s), want the new state", healthShare*b.cost, b.reads.Load(), v2.etag, v1.etag)
		}

		healthy := true // an override takes effect in the views at once
		if err := op.override(b.api, "c1", &healthy); err != nil {
			t.Fatal(err)
		}
		if v := s.current(); v == v2 || b.reads.Load() != 3 {
			t.Error("an override did not rebuild the views at once")
		}

		v3 := s.current() // built from 10 ms ago (its cost) to now
		time.Sleep(detailShare*b.cost - b.cost - time.Millisecond)
		if s.current() != v3 {
			t.Errorf("unchanged views rebuilt before %s", detailShare*b.cost)
		}
		time.Sleep(time.Millisecond)
		v4 := s.current()
		if b.reads.Load() != 4 {
			t.Errorf("unchanged views after %s: %d builds, want 4", detailShare*b.cost, b.reads.Load())
		}
		if s.current() != v4 {
			t.Error("rebuilt again at once")
		}
	})
}
