package fleet

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestPlacementAdvanceAgreesWithChoose: over random changes of the candidates
// (members coming, going, changing region, one to three at a time, across three
// regions and a fourth that is often empty), a placement that advanceLocked keeps is exactly what choosing
// again gives, for checks of 1 to 5 checkers with and without regions; and it is
// kept for most checks, which is what makes a member's coming or going cheap.
func TestPlacementAdvanceAgreesWithChoose(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]candidate, 60)
	for i := range pool {
		name := fmt.Sprintf("m%02d", i)
		region := string(rune('a' + i%3))
		if i%20 == 0 {
			region = "d" // rare: often no candidate is in d, then one comes
		}
		pool[i] = candidate{name: name, memberMeta: memberMeta{region: region, hash: nameHash(name)}}
	}
	in := map[string]candidate{}
	for _, c := range pool[:30] {
		in[c.name] = c
	}
	current := func() []candidate {
		out := make([]candidate, 0, len(in))
		for _, c := range in {
			out = append(out, c)
		}
		slices.SortFunc(out, func(a, b candidate) int { return strings.Compare(a.name, b.name) })
		return out
	}
	wants := []want{{n: 1}, {n: 2}, {n: 3}, {n: 5}, {n: 2, regions: []string{"a", "d"}}, {n: 3, regions: []string{"b"}}, {n: 2, regions: []string{"d"}}}
	f := &Fleet{placeGen: 1}
	f.cands, f.candGen = current(), 1
	type check struct {
		id uint64
		p  *placement
	}
	var checks []check
	for j := range 300 {
		id := shortID(fmt.Sprintf("check-%d", j))
		w := wants[j%len(wants)]
		p := &placement{gen: 1, want: w}
		p.set(id, choose(id, w, f.cands), f.cands)
		checks = append(checks, check{id, p})
	}
	kept, asked := 0, 0
	for step := range 300 {
		for range 1 + rng.IntN(3) {
			c := pool[rng.IntN(len(pool))]
			switch _, ok := in[c.name]; {
			case ok && rng.IntN(4) == 0: // comes back in another region (d stays rare)
				c.region = string(rune('a' + rng.IntN(3)))
				in[c.name] = c
			case ok:
				delete(in, c.name)
			default:
				in[c.name] = c
			}
		}
		f.placeGen++
		now := current()
		f.noteMoveLocked(f.cands, now)
		f.cands, f.candGen = now, f.placeGen
		for _, c := range checks {
			if step%3 != 0 && c.id%2 == 0 {
				continue // asked less often: it advances over several changes at once
			}
			asked++
			fresh := choose(c.id, c.p.want, now)
			if f.advanceLocked(c.p, c.id) {
				kept++
				if !slices.Equal(c.p.checkers, fresh) {
					t.Fatalf("step %d: check %x (%+v) kept checkers %v, choosing again gives %v", step, c.id, c.p.want, c.p.checkers, fresh)
				}
				continue
			}
			c.p.gen = f.placeGen
			c.p.set(c.id, fresh, now)
		}
	}
	if kept*2 < asked {
		t.Errorf("kept %d placements of %d asked for, want most: a member's coming or going leaves most checks' checkers alone", kept, asked)
	}
	t.Logf("kept %d of %d placements without choosing again", kept, asked)
}

// BenchmarkPlaceAfterMemberChange200x100000 is the CPU of bringing 100,000 checks
// of 3 checkers on 200 members up to date after one member left and another came
// (BenchmarkChoose200x100000 chooses every check again).
func BenchmarkPlaceAfterMemberChange200x100000(b *testing.B) {
	all := candidatesOf(201)
	f := &Fleet{placeGen: 1}
	f.cands, f.candGen = all[:200], 1
	ps := make([]*placement, 100_000)
	ids := make([]uint64, len(ps))
	for j := range ps {
		ids[j] = shortID(fmt.Sprintf("check-%d", j))
		ps[j] = &placement{gen: 1, want: want{n: 3}}
		ps[j].set(ids[j], choose(ids[j], want{n: 3}, f.cands), f.cands)
	}
	b.ResetTimer()
	for i := range b.N {
		// m000 leaves or m200 comes, in turn.
		now := all[1:]
		if i%2 == 1 {
			now = all[:200]
		}
		f.placeGen++
		f.noteMoveLocked(f.cands, now)
		f.cands, f.candGen = now, f.placeGen
		for j, p := range ps {
			if !f.advanceLocked(p, ids[j]) {
				p.gen = f.placeGen
				p.set(ids[j], choose(ids[j], p.want, now), now)
			}
		}
	}
}
