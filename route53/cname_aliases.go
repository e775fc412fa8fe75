package route53

// A CNAME must be alone at its name, and healthroute's own configuration refuses a
// name whose answers would mix a CNAME and other records through aliases. The
// converter refuses such a zone or document itself, naming the record set, rather
// than print a configuration the plugin will not load.

const (
	kindCNAME = 1 << iota // answered with a CNAME
	kindOther             // answered with other records
)

// answerKinds is what the members at name answer, following in-zone aliases; memo
// also guards against alias loops.
func (c *converter) answerKinds(name string, memo map[string]int) int {
	if k, ok := memo[name]; ok {
		return k
	}
	memo[name] = 0
	k := 0
	for _, g := range c.byName[name] {
		for _, m := range g.members {
			k |= c.memberKind(g, m, memo)
		}
	}
	memo[name] = k
	return k
}

func (c *converter) memberKind(g *group, m *member, memo map[string]int) int {
	switch {
	case m.aliasTo != "":
		return c.answerKinds(m.aliasTo, memo)
	case g.typ == "CNAME" || len(m.target) > 6 && m.target[:6] == "CNAME ":
		return kindCNAME
	}
	return kindOther
}

// cnameThroughAliases refuses an alias member that brings a CNAME to a name with other
// records, or other records to a name with a CNAME. A name that mixes them in its own
// members is left to cnameAlone.
func (c *converter) cnameThroughAliases() error {
	memo := map[string]int{}
	for _, n := range c.names {
		direct, all := 0, 0
		for _, g := range c.byName[n] {
			for _, m := range g.members {
				k := c.memberKind(g, m, memo)
				all |= k
				if m.aliasTo == "" {
					direct |= k
				}
			}
		}
		if all != kindCNAME|kindOther || direct == kindCNAME|kindOther {
			continue
		}
		want := direct // blame the aliases that bring the other kind
		if want == 0 {
			want = kindOther
		}
		for _, g := range c.byName[n] {
			for _, m := range g.members {
				if m.aliasTo == "" || c.answerKinds(m.aliasTo, memo) == want {
					continue
				}
				return rsErr(m.rs, m.idx, "alias to %s mixes a CNAME and other records at %s through aliases; a CNAME must be alone at its name (give the alias's target A/AAAA values)", m.aliasTo, n)
			}
		}
	}
	return nil
}
