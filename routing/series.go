package routing

import (
	"slices"
	"strings"
)

// The two kinds of series a block numbers; queryCounters.c is indexed by them.
const (
	AnswerSeries = iota // answers_total
	ResortSeries        // last_resort_answers_total
)

// numberSeries numbers the answer series of cfg's records, in the order WalkSeries
// visits them, and finds each record set's zone: the plan's sets, MemberSeries and
// SeriesCount. Set identifiers are unique within a record set's members of one type,
// so only a name with several record sets or types can hold two members of one
// series; a map finds those.
//
// Only a name whose answer can change has series (NoSeries for the others): its
// answers_total ones when one of its record sets has a routing policy (one that
// chooses) or can fail open (guarded), its last-resort one when one can fail open.
// A name of simple records without checks answers alike every time: its counts
// would be the query count, and a scrape of a hundred thousand of them is megabytes.
func (p *Plan) numberSeries(cfg *Config) {
	const unnumbered = NoSeries - 1
	type nameSeries struct {
		sets            int   // record sets of the name
		chooses, guards bool  // one of them chooses, can fail open
		resort          int32 // the name's last-resort series
	}
	names := make(map[string]nameSeries, len(cfg.Records))
	for _, rs := range cfg.Records {
		ns := names[rs.Name]
		g := guarded(rs)
		ns.sets++
		ns.guards = ns.guards || g
		ns.chooses = ns.chooses || g || rs.Policy != PolicySimple
		ns.resort = unnumbered
		names[rs.Name] = ns
	}
	var resorts int32
	type key struct{ name, id string }
	var shared map[key]int32 // series of names where members may share one
	var answers int32
	number := func(rs *RecordSet, id string, single bool) int32 {
		switch {
		case !names[rs.Name].chooses:
			return NoSeries
		case single:
			answers++
			return answers - 1
		}
		if shared == nil {
			shared = map[key]int32{}
		}
		k := key{rs.Name, id}
		n, ok := shared[k]
		if !ok {
			n, answers = answers, answers+1
			shared[k] = n
		}
		return n
	}
	series := make([]int32, 0, cfg.memberCount())
	p.sets = make([]PlanSet, len(cfg.Records))
	p.setOf = make(map[*RecordSet]*PlanSet, len(cfg.Records))
	for i, rs := range cfg.Records {
		ps := &p.sets[i]
		p.setOf[rs] = ps
		ps.RecordSet, ps.policy = rs, rs.Policy
		ps.Zone = uint16(max(0, slices.Index(cfg.Zones, MatchZone(cfg.Zones, strings.TrimPrefix(rs.Name, "*.")))))
		ns := names[rs.Name]
		if ns.resort == unnumbered {
			ns.resort = NoSeries
			if ns.guards {
				ns.resort, resorts = resorts, resorts+1
			}
			names[rs.Name] = ns
		}
		ps.Resort = ns.resort
		single := ns.sets == 1 && !mixedTypes(rs)
		ps.first = int32(len(series))
		if rs.Policy == PolicyMultivalue { // one series for the set; its members never answer alone
			ps.Multi = number(rs, "multivalue", single)
			for range rs.Members {
				series = append(series, ps.Multi)
			}
			continue
		}
		for _, m := range rs.Members {
			series = append(series, number(rs, m.ID, single))
		}
	}
	p.MemberSeries = series
	p.SeriesCount = [2]int32{AnswerSeries: answers, ResortSeries: resorts}
}

// NoSeries is the series number of what has none: a member or record set whose
// name's answer cannot change (numberSeries).
const NoSeries int32 = -1

// guarded reports whether a member of rs can be unhealthy: it has a check, or is an
// alias that evaluates its target's health.
func guarded(rs *RecordSet) bool {
	return slices.ContainsFunc(rs.Members, func(m *Member) bool { return m.Check != nil || m.ETH })
}

// memberCount is how many members cfg's record sets hold.
func (cfg *Config) memberCount() int {
	n := 0
	for _, rs := range cfg.Records {
		n += len(rs.Members)
	}
	return n
}

// mixedTypes reports whether rs has members of more than one type, which may share a
// set identifier. An alias member's type is the one it answers (0: every type of its
// target): an alias and a member of another type are in two type groups, so they too
// may share one.
func mixedTypes(rs *RecordSet) bool {
	for _, m := range rs.Members {
		if m.Type != rs.Members[0].Type {
			return true
		}
	}
	return false
}

// WalkSeries calls fn with the number and labels of each series of kind which in
// p, once each, in numbering order: the first member (or record set) of a series is
// the one that numberSeries gave the next number.
func (p *Plan) WalkSeries(which int, fn func(n int32, zone, record, member string)) {
	next := int32(0)
	visit := func(n int32, ps *PlanSet, member string) {
		if n == next {
			next++
			fn(n, p.zones[ps.Zone], ps.Name, member)
		}
	}
	for i := range p.sets {
		ps := &p.sets[i]
		switch {
		case which == ResortSeries:
			visit(ps.Resort, ps, "")
		case ps.Policy == PolicyMultivalue:
			visit(ps.Multi, ps, "multivalue")
		default:
			for j, m := range ps.Members {
				visit(p.MemberSeries[ps.first+int32(j)], ps, m.ID)
			}
		}
	}
}
