package healthroute

import (
	"slices"
	"strings"
)

// The two kinds of series a block numbers; queryCounters.c is indexed by them.
const (
	answerSeries = iota // answers_total
	resortSeries        // last_resort_answers_total
)

// numberSeries numbers the answer series of cfg's records, in the order walkSeries
// visits them, and finds each record set's zone: the plan's sets, memberSeries and
// seriesCount. Set identifiers are unique within a record set's members of one type,
// so only a name with several record sets or types can hold two members of one
// series; a map finds those.
func (p *plan) numberSeries(cfg *routingConfig) {
	blocks := make(map[string]int, len(cfg.Records)) // record sets per name
	for _, rs := range cfg.Records {
		blocks[rs.Name]++
	}
	resort := make(map[string]int32, len(blocks)) // each name's last-resort series
	type key struct{ name, id string }
	var shared map[key]int32 // series of names where members may share one
	var answers int32
	number := func(rs *recordSet, id string, single bool) int32 {
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
	p.sets = make([]planSet, len(cfg.Records))
	p.setOf = make(map[*recordSet]*planSet, len(cfg.Records))
	for i, rs := range cfg.Records {
		ps := &p.sets[i]
		p.setOf[rs] = ps
		ps.recordSet = rs
		ps.zone = uint16(max(0, slices.Index(cfg.Zones, matchZone(cfg.Zones, strings.TrimPrefix(rs.Name, "*.")))))
		n, ok := resort[rs.Name]
		if !ok {
			n = int32(len(resort))
			resort[rs.Name] = n
		}
		ps.resort = n
		single := blocks[rs.Name] == 1 && !mixedTypes(rs)
		ps.first = int32(len(series))
		if rs.Policy == policyMultivalue { // one series for the set; its members never answer alone
			ps.multi = number(rs, "multivalue", single)
			for range rs.Members {
				series = append(series, ps.multi)
			}
			continue
		}
		for _, m := range rs.Members {
			series = append(series, number(rs, m.ID, single))
		}
	}
	p.memberSeries = series
	p.seriesCount = [2]int32{answerSeries: answers, resortSeries: int32(len(resort))}
}

// memberCount is how many members cfg's record sets hold.
func (cfg *routingConfig) memberCount() int {
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
func mixedTypes(rs *recordSet) bool {
	for _, m := range rs.Members {
		if m.Type != rs.Members[0].Type {
			return true
		}
	}
	return false
}

// walkSeries calls fn with the number and labels of each series of kind which in
// p, once each, in numbering order: the first member (or record set) of a series is
// the one that numberSeries gave the next number.
func (p *plan) walkSeries(which int, fn func(n int32, zone, record, member string)) {
	next := int32(0)
	visit := func(n int32, ps *planSet, member string) {
		if n == next {
			next++
			fn(n, p.zones[ps.zone], ps.Name, member)
		}
	}
	for i := range p.sets {
		ps := &p.sets[i]
		switch {
		case which == resortSeries:
			visit(ps.resort, ps, "")
		case ps.Policy == policyMultivalue:
			visit(ps.multi, ps, "multivalue")
		default:
			for j, m := range ps.Members {
				visit(p.memberSeries[ps.first+int32(j)], ps, m.ID)
			}
		}
	}
}
