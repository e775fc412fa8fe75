package healthroute

import (
	"testing"
	"unsafe"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

// TestMemoryLayout keeps the structs a large configuration holds one of per member,
// record set, record group or name at the size their field order packs them into:
// entries, nodes and mnodes come from the plan's slabs, where every byte counts;
// members, their targets and record sets from the allocator's size classes. A new
// field costs every name.
func TestMemoryLayout(t *testing.T) {
	for _, c := range []struct {
		name      string
		size, max uintptr
	}{
		{"member", unsafe.Sizeof(routing.Member{}), 48},
		{"recordSet", unsafe.Sizeof(routing.RecordSet{}), 48},
		{"planSet", unsafe.Sizeof(routing.PlanSet{}), 24},
		{"node", unsafe.Sizeof(routing.Node{}), 48},
		{"mnode", unsafe.Sizeof(routing.MemberNode{}), 48},
		{"entry", unsafe.Sizeof(routing.Entry{}), 40},
		{"ref", unsafe.Sizeof(routing.Ref{}), 64}, // shared, but one per member of other types
	} {
		if c.size > c.max {
			t.Errorf("%s is %d bytes, want at most %d", c.name, c.size, c.max)
		}
	}
}

// TestMemorySharing: names whose members point at the same addresses or alias the same
// name share the target, their default set identifiers and their A records' address
// bytes, and names whose members are alike share the list of them; a one-value leaf
// answers from itself; nodes in the same state share it; and
// what parse and the plan kept while building (check names, positions, the maps that
// share) is gone once built.
func TestMemorySharing(t *testing.T) {
	block := `healthroute example.org. {
		check c1 tcp 127.0.0.1:1
		check c2 tcp 127.0.0.1:2
		record a.example.org. weighted {
			weight 10 A 192.0.2.1 check c1
			weight 20 A 192.0.2.2 check c2
		}
		record b.example.org. weighted {
			weight 10 A 192.0.2.1 check c1
			weight 20 A 192.0.2.2 check c2
		}
		record c.example.org. weighted {
			weight 10 A 192.0.2.1 check c1
			weight 20 A 192.0.2.2 192.0.2.3 check c2
		}
		record d.example.org. failover {
			primary alias a.example.org.
			secondary A 192.0.2.2 192.0.2.3
		}
		record e.example.org. simple {
			alias a.example.org.
		}
	}`
	r, cfg := testResolver(t, block)
	if cfg.parsing != nil {
		t.Error("the parse state outlives validate")
	}
	a, b, c := cfg.Records[0].Members, cfg.Records[1].Members, cfg.Records[2].Members
	if &a[0].Addrs[0] != &b[0].Addrs[0] || unsafe.StringData(a[0].ID) != unsafe.StringData(b[0].ID) {
		t.Error("members with the same single address do not share it and their set identifier")
	}
	if &a[0] != &b[0] || &a[0] == &c[0] {
		t.Error("records whose members are alike do not share the list of them, or others do")
	}
	if a[0].Check != cfg.Checks["c1"] || b[1].Check != cfg.Checks["c2"] {
		t.Error("check names not resolved to the checks")
	}
	if len(c[1].Addrs) != 2 || &c[1].Addrs[0] == &a[1].Addrs[0] {
		t.Errorf("a member's several addresses: %v, shared with a single one", c[1].Addrs)
	}
	d, e := cfg.Records[3].Members, cfg.Records[4].Members
	if d[1].Ref != c[1].Ref || d[0].Ref != e[0].Ref || d[0].Target != "a.example.org." {
		t.Error("members with the same addresses, or aliasing the same name, do not share their target")
	}

	st := func(name string) *routing.NodeState {
		tb := r.Table.Load()
		return tb.State(tb.Plan.Names[name].Node(dns.TypeA).ID)
	}
	ip := func(name string) *byte {
		return &r.Plan.Names[name].A.Members[0].RRs()[0].(*dns.A).A[0]
	}
	if ip("a.example.org.") != ip("b.example.org.") || r.Plan.Al != nil {
		t.Error("the plan's A records do not share their address bytes, or keep the map that shares them")
	}
	if mn := &r.Plan.Names["a.example.org."].A.Members[0]; &mn.RRs()[0] != &mn.One[0] {
		t.Error("a one-value leaf answers from an array of its own")
	}
	if st("a.example.org.") != st("b.example.org.") {
		t.Error("nodes in the same state do not share it")
	}
	if x, y := st("a.example.org."), st("c.example.org."); x != y || &x.Cum[0] != &y.Cum[0] {
		t.Error("nodes of the same weights do not share their state")
	}
	// c1 down: a's and b's states change together and still share; the answers follow.
	r.Publish(snapshot(cfg, "c1"))
	if x, y := st("a.example.org."), st("b.example.org."); x != y || x.OK[0] || !x.OK[1] || len(x.Cands) != 1 {
		t.Errorf("after c1 went down: a %+v, b %+v", *x, *y)
	}
	if got := values(r, "b.example.org.", dns.TypeA); got != "192.0.2.2" {
		t.Errorf("b with c1 down answers %s, want 192.0.2.2", got)
	}
}

// TestShareMembers: record sets whose members are written alike hold one Member each,
// members that differ in anything (an address, the weight, the check) do not share,
// and each record set still counts its own answers_total series.
func TestShareMembers(t *testing.T) {
	h := testHandler(t, `healthroute {
		check c1 tcp 127.0.0.1:1
		record sm-a.example.org. weighted {
			weight 10 A 192.0.2.1 check c1
			weight 20 A 192.0.2.2
		}
		record sm-b.example.org. weighted {
			weight 10 A 192.0.2.1 check c1
			weight 20 A 192.0.2.2
		}
		record sm-c.example.org. weighted {
			weight 10 A 192.0.2.1
			weight 30 A 192.0.2.2
		}
	}`)
	t.Cleanup(func() { shared.counting.shutdown(h.cfg) })
	a, b, c := h.cfg.Records[0].Members, h.cfg.Records[1].Members, h.cfg.Records[2].Members
	for j := range a {
		if a[j] != b[j] {
			t.Errorf("member %d of sm-a and sm-b, written alike, are two Members", j)
		}
		if a[j] == c[j] {
			t.Errorf("member %d of sm-a and sm-c differ (check, weight) but share a Member", j)
		}
	}
	server := "dns://127.0.0.1:5303"
	seriesAsk(t, h, server, "sm-a.example.org.", dns.TypeA, 40)
	seriesAsk(t, h, server, "sm-b.example.org.", dns.TypeA, 10)
	sum := func(record string) float64 {
		var total float64
		for _, id := range []string{a[0].ID, a[1].ID} {
			total += gatheredCounter(t, "answers_total", map[string]string{"server": server, "record": record, "member": id})
		}
		return total
	}
	if got := sum("sm-a.example.org."); got != 40 {
		t.Errorf("answers_total of sm-a = %v, want 40", got)
	}
	if got := sum("sm-b.example.org."); got != 10 {
		t.Errorf("answers_total of sm-b = %v, want 10", got)
	}
}
