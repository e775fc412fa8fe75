package fleet

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/healthroute/healthroute/health"
)

// Role says what a member does: answer DNS queries, probe checks, or both.
type Role uint8

const (
	RoleBoth   Role = iota // answers and probes: the default
	RoleAnswer             // answers from the others' reports, never probes (a DNS server that cannot reach the targets)
	RoleProbe              // probes for the others; answering is left to its deployment
)

// String returns the role as the Corefile writes it.
func (r Role) String() string {
	switch r {
	case RoleAnswer:
		return "answer"
	case RoleProbe:
		return "probe"
	}
	return "both"
}

// Probes reports whether a member of role r may be a checker.
func (r Role) Probes() bool { return r != RoleAnswer }

// LargeFleet is the fleet size above which a check probed by every member draws a
// warning: its endpoint gets that many probes each interval.
const LargeFleet = 10

// memberMeta is what memberlist's node metadata carries of a member: its region
// and role, and the hash of its name that places checkers.
type memberMeta struct {
	region  string
	role    Role
	hash    uint64
	leaving bool // it is stopping: not to be joined again once it is gone (events.NotifyLeave)
}

// metaVersion starts the node metadata; a member that sends none (an older
// version) is taken as region "" and role both. metaLeaving starts it instead,
// in the same layout, once the member is stopping (Fleet.Stop); an earlier version
// reads that as no region and role both, for the moment before the member leaves.
const (
	metaVersion = 1
	metaLeaving = 2
)

// nodeMeta is this member's node metadata: version (or leaving), role, region.
func (f *Fleet) nodeMeta(limit int) []byte {
	v := byte(metaVersion)
	if f.leaving.Load() {
		v = metaLeaving
	}
	b := append([]byte{v, byte(f.cfg.Role)}, f.cfg.Region...)
	if len(b) > limit {
		return b[:2]
	}
	return b
}

// parseMeta reads a member's node metadata.
func parseMeta(name string, b []byte) memberMeta {
	m := memberMeta{hash: nameHash(name)}
	if len(b) >= 2 && (b[0] == metaVersion || b[0] == metaLeaving) && Role(b[1]) <= RoleProbe {
		m.role, m.region, m.leaving = Role(b[1]), string(b[2:]), b[0] == metaLeaving
	}
	return m
}

func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// score is member m's rendezvous weight for check id: the members with the highest
// scores probe the check. Every member computes the same scores from names alone.
func score(id, member uint64) uint64 {
	x := id ^ (member * 0x9e3779b97f4a7c15)
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// want is who should probe a check: Checkers members (0: every eligible member),
// from Regions when it is not empty.
type want struct {
	n       int
	regions []string
}

func wantOf(s *health.Spec) want { return want{n: s.Checkers, regions: s.Regions} }

func (w want) equal(o want) bool { return w.n == o.n && slices.Equal(w.regions, o.regions) }

// placement is a check's checkers as this member last computed them.
type placement struct {
	gen      uint64 // f.placeGen when computed
	name     string // the check's name, for warnings
	want     want
	checkers []string  // sorted
	low      uint64    // the lowest score of the checkers, for check id (advanceLocked)
	regions  []string  // the checkers' regions
	self     bool      // this member is one of them
	asked    time.Time // when the scheduler last asked (Probes): unasked long enough, it is forgotten
}

// candidate is a member that may probe: reachable, fresh, of a probing role.
type candidate struct {
	name string
	memberMeta
}

// candidatesLocked returns the members that may be checkers now: this one and
// every member memberlist sees whose heartbeats arrive within Suspicion, of a role
// that probes; cached until the set changes (placeGen).
func (f *Fleet) candidatesLocked() []candidate {
	if f.candGen == f.placeGen && f.cands != nil {
		return f.cands
	}
	out := make([]candidate, 0, len(f.alive))
	for name := range f.alive {
		m, ok := f.meta[name]
		if name == f.cfg.Name {
			m, ok = memberMeta{region: f.cfg.Region, role: f.cfg.Role, hash: nameHash(name)}, true
		} else if p := f.peers[name]; p == nil || !p.fresh {
			continue
		}
		if ok && m.role.Probes() {
			out = append(out, candidate{name: name, memberMeta: m})
		}
	}
	if _, ok := f.alive[f.cfg.Name]; !ok && f.cfg.Role.Probes() {
		out = append(out, candidate{name: f.cfg.Name, memberMeta: memberMeta{region: f.cfg.Region, role: f.cfg.Role, hash: nameHash(f.cfg.Name)}})
	}
	slices.SortFunc(out, func(a, b candidate) int { return strings.Compare(a.name, b.name) })
	names := make([]string, len(out))
	for i, c := range out {
		names[i] = c.name
	}
	if f.cands != nil {
		f.noteMoveLocked(f.cands, out)
	}
	f.cands, f.candNames, f.candGen = out, names, f.placeGen
	return out
}

// candMove is how the candidates changed from placement generation from to to: a
// member whose region or role changed is both removed and added.
type candMove struct {
	from, to uint64
	added    []candidate
	removed  []string
}

// maxCandMoves bounds the changes kept; a placement older than all of them is
// computed again.
const maxCandMoves = 64

// noteMoveLocked records how the candidates changed from was to now (both sorted by
// name), as of f.candGen to f.placeGen.
func (f *Fleet) noteMoveLocked(was, now []candidate) {
	m := candMove{from: f.candGen, to: f.placeGen}
	i, j := 0, 0
	for i < len(was) || j < len(now) {
		switch {
		case j == len(now) || i < len(was) && was[i].name < now[j].name:
			m.removed = append(m.removed, was[i].name)
			i++
		case i == len(was) || now[j].name < was[i].name:
			m.added = append(m.added, now[j])
			j++
		default:
			if was[i].memberMeta != now[j].memberMeta {
				m.removed, m.added = append(m.removed, was[i].name), append(m.added, now[j])
			}
			i, j = i+1, j+1
		}
	}
	if len(f.candMoves) == maxCandMoves {
		f.candMoves = slices.Delete(f.candMoves, 0, 1)
	}
	f.candMoves = append(f.candMoves, m)
}

// advanceLocked brings p, a placement of check id computed at an earlier
// generation, to the current one without choosing again, when no change of the
// candidates since could change its checkers; it reports whether it did. A member
// that leaves matters only if it was a checker. One that comes matters only if it
// would be chosen: its score beats a checker's, or its region has no checker (it
// may be that region's best), or the check has fewer checkers than it asks for.
// Otherwise the choice is the same (choose: the best of each region first, then
// the best of all), so a member coming or going costs every member a few scores
// per check instead of one per candidate and check.
func (f *Fleet) advanceLocked(p *placement, id uint64) bool {
	if p.want.n <= 0 {
		return false // every candidate (of its regions): listed again, no scores to spare
	}
	f.candidatesLocked() // notes the change since the candidates were last listed
	gen := p.gen
	for _, m := range f.candMoves {
		if m.from != gen {
			continue
		}
		if !p.keeps(m, id) {
			return false
		}
		gen = m.to
	}
	if gen != f.placeGen {
		return false // older than the changes kept
	}
	p.gen = gen
	return true
}

// keeps reports whether the candidates' change m leaves p's checkers as they are
// (advanceLocked).
func (p *placement) keeps(m candMove, id uint64) bool {
	for _, r := range m.removed {
		if _, found := slices.BinarySearch(p.checkers, r); found {
			return false
		}
	}
	for _, a := range m.added {
		if len(p.want.regions) > 0 && !slices.Contains(p.want.regions, a.region) {
			continue
		}
		if len(p.checkers) < p.want.n || score(id, a.hash) > p.low || !slices.Contains(p.regions, a.region) {
			return false
		}
	}
	return true
}

// choose picks the checkers of check id among cands: those in w's regions, the
// highest rendezvous scores first, one from each region before a second from any
// (as Route 53 spreads a check's checkers over its regions). It returns them sorted.
func choose(id uint64, w want, cands []candidate) []string {
	type scored struct {
		i int // in cands
		s uint64
	}
	if w.n <= 0 {
		var out []string
		for _, c := range cands {
			if len(w.regions) == 0 || slices.Contains(w.regions, c.region) {
				out = append(out, c.name)
			}
		}
		return out // cands is sorted
	}
	// One pass: the best of each region, and the 2n best of all (n of which at
	// most are some region's best), each by score.
	var best []scored
	top := make([]scored, 0, 2*w.n+1)
	eligible := 0
	for i, c := range cands {
		if len(w.regions) > 0 && !slices.Contains(w.regions, c.region) {
			continue
		}
		eligible++
		sc := scored{i, score(id, c.hash)}
		k := slices.IndexFunc(best, func(b scored) bool { return cands[b.i].region == c.region })
		switch {
		case k < 0:
			best = append(best, sc)
		case sc.s > best[k].s:
			best[k] = sc
		}
		if len(top) < 2*w.n || sc.s > top[len(top)-1].s {
			at, _ := slices.BinarySearchFunc(top, sc, func(a, b scored) int { return cmp.Compare(b.s, a.s) })
			top = slices.Insert(top, at, sc)
			top = top[:min(len(top), 2*w.n)]
		}
	}
	if eligible <= w.n {
		var out []string
		for _, c := range cands {
			if len(w.regions) == 0 || slices.Contains(w.regions, c.region) {
				out = append(out, c.name)
			}
		}
		return out
	}
	slices.SortFunc(best, func(a, b scored) int { return cmp.Compare(b.s, a.s) })
	best = best[:min(len(best), w.n)]
	out := make([]string, 0, w.n)
	for _, b := range best {
		out = append(out, cands[b.i].name)
	}
	for _, t := range top {
		if len(out) == w.n {
			break
		}
		if !slices.ContainsFunc(best, func(b scored) bool { return b.i == t.i }) {
			out = append(out, cands[t.i].name)
		}
	}
	slices.Sort(out)
	return out
}

// placeLocked returns the placement of fp, recomputing it when the members that may
// probe changed or the check asks for other checkers; a change of checkers from an
// earlier one counts as a reassignment.
func (f *Fleet) placeLocked(fp, name string, w want) *placement {
	p := f.placed[fp]
	if p != nil && p.want.equal(w) && (p.gen == f.placeGen || f.advanceLocked(p, shortID(fp))) {
		// The warning waits a Suspicion after start, which may end after the
		// placement was computed and while the members stay the same.
		f.warnShortLocked(fp, name, w, len(p.checkers))
		return p
	}
	cands := f.candidatesLocked()
	var checkers []string
	if w.n <= 0 && len(w.regions) == 0 {
		checkers = f.candNames // every candidate: one list shared by such checks, never written
	} else {
		checkers = choose(shortID(fp), w, cands)
	}
	if w.n == 0 && len(w.regions) == 0 && len(cands) > LargeFleet && !f.warnedAll {
		f.warnedAll = true
		where := "check " + name
		if o := f.origin[fp]; o != "" {
			where = o + ": " + where
		}
		log.Warningf("%s: fleet: %d members each probe it (and any other check without checkers or regions): its endpoint gets %d probes an interval; give such checks a number of checkers (docs/fleet.md, Placement)",
			where, len(cands), len(cands))
	}
	f.warnShortLocked(fp, name, w, len(checkers))
	self := slices.Contains(checkers, f.cfg.Name)
	if p == nil {
		p = &placement{asked: f.now()}
		f.placed[fp] = p
		f.noteLocked(fp)
	} else if !slices.Equal(p.checkers, checkers) {
		reassignments.Inc()
	}
	if self != p.self {
		if self {
			f.assigned++
		} else {
			f.assigned--
		}
		assignedChecks.Set(float64(f.assigned))
	}
	p.gen, p.name, p.want, p.self = f.placeGen, name, w, self
	if w.n > 0 {
		p.set(shortID(fp), checkers, cands)
	} else {
		p.checkers = checkers // advanceLocked lists them again
	}
	return p
}

// set makes checkers p's, noting their lowest score for check id and their regions
// from cands (sorted by name), which advanceLocked compares newcomers with.
func (p *placement) set(id uint64, checkers []string, cands []candidate) {
	p.checkers, p.low, p.regions = checkers, math.MaxUint64, p.regions[:0]
	for _, name := range checkers {
		k, found := slices.BinarySearchFunc(cands, name, func(c candidate, n string) int { return strings.Compare(c.name, n) })
		if !found {
			continue
		}
		p.low = min(p.low, score(id, cands[k].hash))
		if !slices.Contains(p.regions, cands[k].region) {
			p.regions = append(p.regions, cands[k].region)
		}
	}
}

// warnShortLocked logs, once per check and short of checkers, that a check has
// fewer checkers than it asks for: no member in its regions, or fewer members that
// may probe than it names. It waits one Suspicion after start, so that members
// have joined.
func (f *Fleet) warnShortLocked(fp, name string, w want, got int) {
	short := got == 0 || w.n > 0 && got < w.n
	if !short {
		delete(f.short, fp)
		return
	}
	if f.short[fp] || f.now().Sub(f.start) < f.cfg.Suspicion {
		return
	}
	f.short[fp] = true
	where := name
	if o := f.origin[fp]; o != "" {
		where = o + ": check " + name
	}
	switch {
	case got == 0 && len(w.regions) > 0:
		log.Warningf("%s: regions %s: no member this one reaches is in them: nothing probes the check, its last status is kept", where, strings.Join(w.regions, " "))
	case got == 0:
		log.Warningf("%s: no member this one reaches may probe (all are role answer): nothing probes the check, its last status is kept", where)
	case len(w.regions) > 0:
		log.Warningf("%s: checkers %d: only %d members this one reaches in regions %s may probe: all of them do", where, w.n, got, strings.Join(w.regions, " "))
	default:
		log.Warningf("%s: checkers %d: only %d members this one reaches may probe: all of them do", where, w.n, got)
	}
}

// forgetPlacementsLocked drops the placements of checks the scheduler has not
// asked about for forget (released by a reload), with what was noted of them.
func (f *Fleet) forgetPlacementsLocked(now time.Time, forget time.Duration) {
	for fp, p := range f.placed {
		if now.Sub(p.asked) <= forget {
			continue
		}
		if p.self {
			f.assigned--
			assignedChecks.Set(float64(f.assigned))
		}
		delete(f.placed, fp)
		delete(f.origin, fp)
		delete(f.short, fp)
	}
}

// membersMovedLocked notes that the members that may probe may have changed: every
// placement is recomputed when next asked for.
// Every decision may move with them: the reports that count are those of a
// check's checkers.
func (f *Fleet) membersMovedLocked() { f.placeGen++; f.dirtyAll = true }

// Probes reports whether this member is one of spec's checkers now (health.Placer):
// the scheduler asks before each probe, so a member that becomes a checker starts
// within one interval and one that stops probes no more.
func (f *Fleet) Probes(spec *health.Spec) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if spec.Origin != "" {
		f.origin[spec.Fingerprint()] = spec.Origin
	}
	p := f.placeLocked(spec.Fingerprint(), spec.Name, wantOf(spec))
	p.asked = f.now()
	if r := f.own[shortID(spec.Fingerprint())]; r != nil && !p.self {
		// Not a checker now: the time to this member's next probe, if it is placed
		// again, is no gap between probes. Counted as one, it would keep that probe's
		// report fresh (freshFor) for 3 times the time it was not a checker, and the
		// others would count it, vouched by every beat, that long after its probes
		// stopped again (TestFleetPropertyFakeClock, seed 28).
		r.nogap = true
	}
	return p.self
}

// Checkers returns spec's checkers as this member sees them now, sorted.
func (f *Fleet) Checkers(spec *health.Spec) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.placeLocked(spec.Fingerprint(), spec.Name, wantOf(spec)).checkers)
}

// checkerLocked reports whether member name counts for check fp: with no placement
// known yet (the scheduler has not asked), every member of a probing role does.
func (f *Fleet) checkerLocked(fp, name string) bool {
	p := f.placed[fp]
	if p == nil {
		if name == f.cfg.Name {
			return f.cfg.Role.Probes()
		}
		m, ok := f.meta[name]
		return !ok || m.role.Probes()
	}
	if p.gen != f.placeGen {
		p = f.placeLocked(fp, p.name, p.want)
	}
	_, found := slices.BinarySearch(p.checkers, name)
	return found
}

// checkersLocked returns fp's checkers as placed now, and whether the check names
// them (false before the scheduler asked, or when every member probes it).
func (f *Fleet) checkersLocked(fp string) ([]string, bool) {
	p := f.placed[fp]
	if p == nil {
		return nil, false
	}
	if p.gen != f.placeGen {
		p = f.placeLocked(fp, p.name, p.want)
	}
	return slices.Clone(p.checkers), p.want.n > 0 || len(p.want.regions) > 0
}

// whereLocked returns member name's region and gossip address, as known here.
func (f *Fleet) whereLocked(name string) (region, addr string) {
	if name == f.cfg.Name {
		return f.cfg.Region, f.addr
	}
	if n, ok := f.alive[name]; ok {
		addr = n.Address()
	}
	return f.meta[name].region, addr
}
