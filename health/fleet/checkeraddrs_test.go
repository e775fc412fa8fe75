package fleet

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestCheckerAddrsAreTheProbingMembers starts three members on their own
// loopback addresses, one of role answer: every member gives the addresses of
// the two that probe.
func TestCheckerAddrsAreTheProbingMembers(t *testing.T) {
	roles := []Role{RoleBoth, RoleProbe, RoleAnswer}
	var ms []*Fleet
	for i, role := range roles {
		m := member{name: fmt.Sprintf("m%d", i), key: testKey, role: role, bind: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)}), 0)}
		if i > 0 {
			m.join = []string{ms[0].Addr()}
		}
		ms = append(ms, start(t, nil, m))
	}
	want := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}
	for _, f := range ms {
		waitForDetail(t, 30*time.Second, f.Name()+" gives the probing members' addresses", func() bool {
			return slices.Equal(f.CheckerAddrs(), want)
		}, func() string { return fmt.Sprint(f.CheckerAddrs()) })
	}
}
