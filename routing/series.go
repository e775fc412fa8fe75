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
func (p *Plan) numberSeries(cfg *Config) {
	blocks := make(map[string]int, len(cfg.Records)) // record sets per name
	for _, rs := range cfg.Records {
		blocks[rs.Name]++
	}
	resort := make(map[string]int32, len(blocks)) // each name's last-resort series
	type key struct{ name, id string }
	var shared map[key]int32 // series of names where members may share one
	var answers int32
	number := func(rs *RecordSet, id string, single bool) int32 {
		if single {
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
		ps.RecordSet = rs
		ps.Zone = uint16(max(0, slices.Index(cfg.Zones, MatchZone(cfg.Zones, strings.TrimPrefix(rs.Name, "*.")))))
		n, ok := resort[rs.Name]
		if !ok {
			n = int32(len(resort))
			resort[rs.Name] = n
		}
		ps.Resort = n
		single := blocks[rs.Name] == 1 && !mixedTypes(rs)
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
	p.SeriesCount = [2]int32{AnswerSeries: answers, ResortSeries: int32(len(resort))}
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
