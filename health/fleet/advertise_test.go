package fleet

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestAdvertisedAddressCarriesAllGossip runs three members at the default timers,
// each bound to its own loopback IP and reachable only through a proxy at the
// address it advertises (as behind NAT or a Kubernetes Service): they join through
// the advertised addresses, name each other by them, and every report travels
// through the proxies, so cutting the proxies cuts the members apart (after
// suspicion) and healing them brings them back.
func TestAdvertisedAddressCarriesAllGossip(t *testing.T) {
	const fp = "fp-web"
	gs := make([]coretest.Gossiper, 3)
	for i := range gs {
		gs[i] = coretest.Gossiper{
			Bind:      netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 102, byte(i + 1)}), uint16(coretest.FreePort(t))),
			Advertise: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 103, byte(i + 1)}), uint16(coretest.FreePort(t))),
		}
	}
	p := coretest.NewPartition(t, gs)
	var ms []*Fleet
	for i, g := range gs {
		m := member{name: fmt.Sprintf("m%d", i), bind: g.Bind, advertise: g.Advertise, key: testKey}
		for j, o := range gs {
			if j != i {
				m.join = append(m.join, o.Advertise.String())
			}
		}
		ms = append(ms, start(t, nil, m))
	}
	for i, m := range ms {
		if m.Addr() != gs[i].Advertise.String() {
			t.Errorf("%s's Addr() is %s, want its advertised %s", m.Name(), m.Addr(), gs[i].Advertise)
		}
		probe(t, m, fp, time.Second, false)
	}
	counts := func(want ...int) func() bool {
		return func() bool {
			for i, m := range ms {
				if m.View(fp).Total != want[i] {
					return false
				}
			}
			return true
		}
	}
	detail := func() string {
		s := ""
		for _, m := range ms {
			s += fmt.Sprintf("\n%s: members %v, %d reports counted", m.Name(), m.Members(), m.View(fp).Total)
		}
		return s + fmt.Sprintf("\nproxied %d, dropped %d", p.Forwarded.Load(), p.Dropped.Load())
	}
	waitForDetail(t, 20*time.Second, "every member counts all three", counts(3, 3, 3), detail)
	for i, m := range ms {
		for _, r := range m.View(fp).Reports {
			var j int
			fmt.Sscanf(r.Member, "m%d", &j)
			if r.Addr != gs[j].Advertise.String() {
				t.Errorf("%s shows %s at %q, want its advertised address %s", m.Name(), r.Member, r.Addr, gs[j].Advertise)
			}
		}
		if miss := m.missing(); len(miss) != 0 {
			t.Errorf("%s: join targets still missing with every member alive: %v", ms[i].Name(), miss)
		}
	}
	if p.Forwarded.Load() == 0 {
		t.Fatal("no gossip went through the advertised addresses")
	}

	p.Split([]int{0, 1}, []int{2})
	waitForDetail(t, defaultSuspicion+5*time.Second, "the split cuts m2 off: the gossip ran only through the advertised addresses",
		counts(2, 2, 1), detail)
	p.Heal()
	waitForDetail(t, 10*time.Second, "every member counts all three again", counts(3, 3, 3), detail)
}

// TestTransportDialsFromBindAddress: a member bound to one address opens its gossip
// connections from it, as it sends its datagrams, so that the others (and a proxy
// or NAT between them) see one address per member; bound to every address, it
// leaves the choice to the kernel.
func TestTransportDialsFromBindAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct{ bind, want string }{{"127.0.102.9:0", "127.0.102.9"}, {"0.0.0.0:0", "127.0.0.1"}} {
		tr, err := newTransport(netip.MustParseAddrPort(tc.bind), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := tr.DialTimeout(ln.Addr().String(), time.Second)
		if err != nil {
			t.Fatalf("bound to %s: %v", tc.bind, err)
		}
		in, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got := in.RemoteAddr().(*net.TCPAddr).IP.String(); got != tc.want {
			t.Errorf("bound to %s, a gossip connection came from %s, want %s", tc.bind, got, tc.want)
		}
		in.Close()
		c.Close()
		tr.Shutdown()
	}
}
