package fleet

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthroute/healthroute/health"
)

// candidatesOf is n members named m000... in regions a, b and c in turn.
func candidatesOf(n int) []candidate {
	out := make([]candidate, n)
	for i := range out {
		name := fmt.Sprintf("m%03d", i)
		out[i] = candidate{name: name, memberMeta: memberMeta{region: string(rune('a' + i%3)), hash: nameHash(name)}}
	}
	return out
}

// TestChooseSpreadsLoadOverMembersAndRegions places 100,000 checks (20,000 under
// the race detector) of 3 checkers on 200 members: every member probes close to the
// mean, each check's three
// checkers are in three regions, the order the members are listed in does not
// matter, and when 20 members go only the checks they probed get new checkers.
func TestChooseSpreadsLoadOverMembersAndRegions(t *testing.T) {
	const members = 200
	checks := 100_000
	if raceDetector {
		checks = 20_000
	}
	cands := candidatesOf(members)
	region := map[string]string{}
	for _, c := range cands {
		region[c.name] = c.region
	}
	shuffled := slices.Clone(cands)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	slices.SortFunc(shuffled, func(a, b candidate) int { return strings.Compare(a.name, b.name) })
	gone := map[string]bool{}
	var rest []candidate
	for i, c := range cands {
		if i%10 == 7 {
			gone[c.name] = true
		} else {
			rest = append(rest, c)
		}
	}
	load := map[string]int{}
	moved, touched := 0, 0
	for j := range checks {
		id := shortID(fmt.Sprintf("check-%d", j))
		got := choose(id, want{n: 3}, cands)
		if len(got) != 3 {
			t.Fatalf("check %d: %d checkers %v, want 3", j, len(got), got)
		}
		regions := map[string]bool{}
		for _, m := range got {
			load[m]++
			regions[region[m]] = true
		}
		if len(regions) != 3 {
			t.Fatalf("check %d: checkers %v in regions %v, want one in each of 3", j, got, slices.Sorted(maps.Keys(regions)))
		}
		if again := choose(id, want{n: 3}, shuffled); !slices.Equal(again, got) {
			t.Fatalf("check %d: %v, then %v from the same members", j, got, again)
		}
		after := choose(id, want{n: 3}, rest)
		hit := slices.ContainsFunc(got, func(m string) bool { return gone[m] })
		if hit {
			touched++
		}
		if !slices.Equal(after, got) {
			moved++
			if !hit {
				t.Fatalf("check %d: checkers %v, none of them gone, became %v", j, got, after)
			}
		}
	}
	lo, hi := checks, 0
	for _, n := range load {
		lo, hi = min(lo, n), max(hi, n)
	}
	mean := 3 * checks / members
	t.Logf("load per member: %d to %d checks (mean %d); 10%% of members gone: %d checks (%.1f%%) changed checkers", lo, hi, mean, moved, 100*float64(moved)/float64(checks))
	if len(load) != members || hi > mean*5/4 || lo < mean*3/4 {
		t.Errorf("load from %d to %d checks on %d members, want within 25%% of %d", lo, hi, len(load), mean)
	}
	if moved != touched {
		t.Errorf("%d checks changed checkers, want the %d whose checker went", moved, touched)
	}
}

// TestChooseWithinRegionsAndShort: checks limited to regions get checkers there
// only; one that asks for more checkers than may probe gets all of them; every
// member (n 0) is every candidate.
func TestChooseWithinRegionsAndShort(t *testing.T) {
	cands := candidatesOf(8) // a: m000 m003 m006, b: m001 m004 m007, c: m002 m005
	for j := range 1000 {
		id := shortID(fmt.Sprint(j))
		got := choose(id, want{n: 3, regions: []string{"a", "b"}}, cands)
		if len(got) != 3 {
			t.Fatalf("%v: want 3 checkers", got)
		}
		for _, m := range got {
			if r := cands[slices.IndexFunc(cands, func(c candidate) bool { return c.name == m })].region; r == "c" {
				t.Fatalf("check %d: checker %s in region c, want a or b only", j, m)
			}
		}
	}
	if got := choose(1, want{n: 5, regions: []string{"c"}}, cands); !slices.Equal(got, []string{"m002", "m005"}) {
		t.Errorf("5 checkers in c: %v, want both members of c", got)
	}
	if got := choose(1, want{regions: []string{"z"}}, cands); len(got) != 0 {
		t.Errorf("region z: %v, want none", got)
	}
	if got := choose(1, want{}, cands); len(got) != 8 {
		t.Errorf("every member: %v", got)
	}
}

// placedProber drives members as their schedulers would: every second each member
// probes spec (its result is down(member)) when it is one of its checkers, and the
// probes per member are counted.
type placedProber struct {
	mu     sync.Mutex
	probes map[string]int
	stop   chan struct{}
	done   chan struct{}
}

func startPlacedProber(ms []*Fleet, spec *health.Spec, down func(string) bool) *placedProber {
	p := &placedProber{probes: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			for _, m := range ms {
				if m.Probes(spec) {
					m.Local(spec.Fingerprint(), status(down(m.Name())))
					p.mu.Lock()
					p.probes[m.Name()]++
					p.mu.Unlock()
				}
			}
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *placedProber) close() { close(p.stop); <-p.done }

// agreed reports whether every member of ms places spec's checkers on the same
// members, none of them in not, and returns them.
func agreed(ms []*Fleet, spec *health.Spec, n int, not ...*Fleet) ([]string, bool) {
	first := ms[0].Checkers(spec)
	if len(first) != n {
		return first, false
	}
	for _, m := range ms[1:] {
		if !slices.Equal(m.Checkers(spec), first) {
			return first, false
		}
	}
	for _, o := range not {
		if slices.Contains(first, o.Name()) {
			return first, false
		}
	}
	return first, true
}

func byName(ms []*Fleet, names []string) (in, out []*Fleet) {
	for _, m := range ms {
		if slices.Contains(names, m.Name()) {
			in = append(in, m)
		} else {
			out = append(out, m)
		}
	}
	return in, out
}

// placementBound is how soon the members still reachable replace a checker that
// fell silent: the heartbeat suspicion plus a heartbeat for the tick that notices
// it, plus 2 s for a machine shared with other tests.
const placementBound = defaultSuspicion + DefaultBeat + 2*time.Second

// TestPlacementReplacesIsolatedCheckersDefaults runs 6 members in regions a, b
// and c at the timers users get, with a check of 2 checkers: every member agrees
// on them, only they probe, and every member decides from their reports. When both
// checkers are cut off from the others, the 4 left agree on 2 of their own within
// placementBound and decide from those fresh reports, the check's answer unchanged;
// each cut-off member, alone, probes for itself.
func TestPlacementReplacesIsolatedCheckersDefaults(t *testing.T) {
	n := &netsim{}
	ms := cluster(t, n, 6, member{regions: []string{"a", "b", "c"}})
	spec := &health.Spec{Name: "web", Target: "http://192.0.2.1/", Checkers: 2}
	fp := spec.Fingerprint()
	p := startPlacedProber(ms, spec, func(string) bool { return false })
	defer p.close()
	var first []string
	waitForDetail(t, 20*time.Second, "every member agrees on 2 checkers and counts their 2 reports", func() bool {
		var ok bool
		if first, ok = agreed(ms, spec, 2); !ok {
			return false
		}
		for _, m := range ms {
			if v := m.View(fp); v.Total != 2 || v.Healthy != 2 || m.Status(fp, health.Status{}).Down {
				return false
			}
		}
		return true
	}, func() string { return placementDetail(ms, spec) })
	checkers, rest := byName(ms, first)
	if r := []string{ms[0].View(fp).Reports[0].Region}; r[0] == "" {
		t.Errorf("view without regions: %+v", ms[0].View(fp))
	}

	cut := time.Now()
	for _, c := range checkers {
		n.isolate(c, true)
	}
	waitForDetail(t, placementBound, "the 4 left agree on 2 checkers of their own and count only theirs", func() bool {
		if _, ok := agreed(rest, spec, 2, checkers...); !ok {
			return false
		}
		for _, m := range rest {
			if v := m.View(fp); v.Total != 2 || v.Healthy != 2 {
				return false
			}
		}
		return true
	}, func() string { return placementDetail(ms, spec) })
	t.Logf("2 isolated checkers replaced in %s", time.Since(cut).Round(time.Millisecond))
	for _, m := range ms {
		if m.Status(fp, health.Status{}).Down {
			t.Errorf("%s decides down after the replacement", m.Name())
		}
	}
	// Each isolated checker's own view moves at its own beat, which need not have
	// come by the time the others agreed.
	for _, c := range checkers {
		waitForDetail(t, placementBound, fmt.Sprintf("isolated %s places the check on itself", c.Name()), func() bool {
			return slices.Equal(c.Checkers(spec), []string{c.Name()})
		}, func() string { return fmt.Sprint(c.Checkers(spec)) })
	}
}

// TestPlacementEachSideOfPartitionDefaults splits 6 members (timers users get) so
// that a check's 3 checkers are on one side and the other 3 on the other: the other
// side assigns 3 checkers of its own within placementBound, each side decides from
// its own fresh reports (the endpoint looks down from the checkers' side only), and
// after the heal the fleet agrees on one set of 3 again.
func TestPlacementEachSideOfPartitionDefaults(t *testing.T) {
	n := &netsim{}
	ms := cluster(t, n, 6, member{regions: []string{"a", "b", "c"}})
	spec := &health.Spec{Name: "web", Target: "http://192.0.2.2/", Checkers: 3}
	fp := spec.Fingerprint()
	var mu sync.Mutex
	downFrom := map[string]bool{}
	p := startPlacedProber(ms, spec, func(name string) bool { mu.Lock(); defer mu.Unlock(); return downFrom[name] })
	defer p.close()
	var first []string
	waitForDetail(t, 20*time.Second, "every member agrees on 3 checkers", func() bool {
		var ok bool
		first, ok = agreed(ms, spec, 3)
		return ok && ms[0].View(fp).Total == 3
	}, func() string { return placementDetail(ms, spec) })
	checkers, rest := byName(ms, first)
	mu.Lock()
	for _, c := range first {
		downFrom[c] = true
	}
	mu.Unlock()
	cut := time.Now()
	n.split(checkers, rest)
	waitForDetail(t, placementBound, "each side places the check on its own 3 members and decides from them", func() bool {
		if _, ok := agreed(rest, spec, 3, checkers...); !ok {
			return false
		}
		if _, ok := agreed(checkers, spec, 3, rest...); !ok {
			return false
		}
		for _, m := range rest {
			if v := m.View(fp); v.Total != 3 || v.Healthy != 3 || m.Status(fp, health.Status{}).Down {
				return false
			}
		}
		for _, m := range checkers {
			if v := m.View(fp); v.Total != 3 || v.Healthy != 0 || !m.Status(fp, health.Status{}).Down {
				return false
			}
		}
		return true
	}, func() string { return placementDetail(ms, spec) })
	t.Logf("the side without checkers had its own in %s", time.Since(cut).Round(time.Millisecond))

	n.heal()
	waitForDetail(t, 30*time.Second, "after the heal, every member agrees on one set of 3 again", func() bool {
		_, ok := agreed(ms, spec, 3)
		return ok
	}, func() string { return placementDetail(ms, spec) })
}

func placementDetail(ms []*Fleet, spec *health.Spec) string {
	var b strings.Builder
	for _, m := range ms {
		v := m.View(spec.Fingerprint())
		fmt.Fprintf(&b, "\n%s sees %v: checkers %v, %d of %d healthy", m.Name(), m.Members(), v.Checkers, v.Healthy, v.Total)
	}
	return b.String()
}

// TestPlacementWithoutCandidates: a check limited to a region no member reachable
// is in has no checker, and its view says why; a check asking for more checkers
// than may probe gets every one; a member of role answer probes nothing.
func TestPlacementWithoutCandidates(t *testing.T) {
	m := start(t, nil, member{name: "solo", region: "c"})
	inA := &health.Spec{Name: "a-only", Target: "http://192.0.2.3/", Regions: []string{"a"}}
	if m.Probes(inA) {
		t.Error("a member of region c probes a check limited to region a")
	}
	if v := m.View(inA.Fingerprint()); len(v.Checkers) != 0 || v.Problem != "no checker: no member this one reaches is in regions a" {
		t.Errorf("view of a check without checker: %+v", v)
	}
	five := &health.Spec{Name: "five", Target: "http://192.0.2.4/", Checkers: 5}
	if !m.Probes(five) || !slices.Equal(m.Checkers(five), []string{"solo"}) || m.View(five.Fingerprint()).Problem != "" {
		t.Errorf("5 checkers wanted of 1 member: probes %v, checkers %v", m.Probes(five), m.Checkers(five))
	}
	dmz := start(t, nil, member{name: "dmz", role: RoleAnswer})
	all := &health.Spec{Name: "all", Target: "http://192.0.2.5/"}
	if dmz.Probes(all) || dmz.View(all.Fingerprint()).Problem != "no checker: no member this one reaches may probe it" {
		t.Errorf("a lone member of role answer: probes %v, view %+v", dmz.Probes(all), dmz.View(all.Fingerprint()))
	}
}

// TestRoleAndRegionTravel: a member's region and role reach the others in
// memberlist's node metadata: a member of role answer is nobody's checker, and each
// member's view shows the others' regions.
func TestRoleAndRegionTravel(t *testing.T) {
	ms := cluster(t, nil, 2, member{regions: []string{"a", "b"}})
	dmz := start(t, nil, member{name: "dmz", key: testKey, region: "c", role: RoleAnswer, join: []string{ms[0].Addr()}})
	all := append(ms, dmz)
	spec := &health.Spec{Name: "web", Target: "http://192.0.2.6/"}
	waitForDetail(t, 20*time.Second, "every member places the check on the two that probe", func() bool {
		for _, m := range all {
			if !slices.Equal(m.Checkers(spec), []string{"m00", "m01"}) {
				return false
			}
		}
		return true
	}, func() string { return placementDetail(all, spec) })
	for _, m := range all {
		for name, region := range map[string]string{"m00": "a", "m01": "b", "dmz": "c"} {
			if got, _ := m.whereOf(name); got != region {
				t.Errorf("%s sees %s in region %q, want %q", m.Name(), name, got, region)
			}
		}
	}
}

func (f *Fleet) whereOf(name string) (region, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.whereLocked(name)
}

// chooseBySort is choose written plainly: every eligible candidate sorted by score,
// the best of each region first, then the best of the rest.
func chooseBySort(id uint64, w want, cands []candidate) []string {
	var in []candidate
	for _, c := range cands {
		if len(w.regions) == 0 || slices.Contains(w.regions, c.region) {
			in = append(in, c)
		}
	}
	if w.n <= 0 || w.n >= len(in) {
		out := []string{}
		for _, c := range in {
			out = append(out, c.name)
		}
		return out
	}
	slices.SortFunc(in, func(a, b candidate) int {
		sa, sb := score(id, a.hash), score(id, b.hash)
		if sa > sb {
			return -1
		} else if sa < sb {
			return 1
		}
		return 0
	})
	var out, regions []string
	for _, c := range in {
		if len(out) < w.n && !slices.Contains(regions, c.region) {
			regions, out = append(regions, c.region), append(out, c.name)
		}
	}
	for _, c := range in {
		if len(out) < w.n && !slices.Contains(out, c.name) {
			out = append(out, c.name)
		}
	}
	slices.Sort(out)
	return out
}

// TestChooseMatchesSortedChoice: the one-pass choose picks what sorting every
// candidate by score picks, for small and large fleets, few and many regions, and
// checks limited to regions.
func TestChooseMatchesSortedChoice(t *testing.T) {
	many := candidatesOf(60)
	for i := range many {
		many[i].region = fmt.Sprintf("r%d", i%25)
	}
	fleets := [][]candidate{candidatesOf(2), candidatesOf(8), candidatesOf(200), many}
	wants := []want{{n: 1}, {n: 2}, {n: 3}, {n: 5}, {n: 16}, {n: 3, regions: []string{"a", "b"}}, {n: 2, regions: []string{"c"}},
		{n: 4, regions: []string{"r1", "r2", "r3"}}, {regions: []string{"a"}}, {}}
	checks := 2000
	if raceDetector {
		checks = 300
	}
	for j := range checks {
		id := shortID(fmt.Sprintf("check-%d", j))
		for fi, cands := range fleets {
			for _, w := range wants {
				got, ref := choose(id, w, cands), chooseBySort(id, w, cands)
				if len(got) == 0 && len(ref) == 0 {
					continue
				}
				if !slices.Equal(got, ref) {
					t.Fatalf("check %d, fleet %d, %+v: %v, sorting picks %v", j, fi, w, got, ref)
				}
			}
		}
	}
}

// TestPlacementForgottenWhenNoLongerAsked: a check the scheduler stops asking
// about (a reload released it) is forgotten 10 stale bounds later, and the checks
// this member is a checker of are counted down with it.
func TestPlacementForgottenWhenNoLongerAsked(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	m := start(t, nil, member{name: "solo", clock: clock})
	kept := &health.Spec{Name: "kept", Target: "http://192.0.2.7/", Checkers: 1}
	gone := &health.Spec{Name: "gone", Target: "http://192.0.2.8/", Checkers: 1}
	if !m.Probes(kept) || !m.Probes(gone) {
		t.Fatal("a lone member is not the checker of its checks")
	}
	assigned := func() int { m.mu.Lock(); defer m.mu.Unlock(); return m.assigned }
	if n := assigned(); n != 2 {
		t.Fatalf("%d checks assigned, want 2", n)
	}
	mu.Lock()
	now = now.Add(10*defaultStale + time.Minute)
	mu.Unlock()
	m.Probes(kept)
	m.tick()
	m.mu.Lock()
	_, keptThere := m.placed[kept.Fingerprint()]
	_, goneThere := m.placed[gone.Fingerprint()]
	m.mu.Unlock()
	if !keptThere || goneThere || assigned() != 1 {
		t.Errorf("after 11 min: kept %v, gone %v, %d assigned; want the unasked one forgotten and 1 assigned", keptThere, goneThere, assigned())
	}
}
