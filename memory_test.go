package healthroute

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/miekg/dns"
)

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
	t.Cleanup(func() { counting.shutdown(h.cfg) })
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

// TestShareMembersKey: the key that decides sharing covers every field of Member, so
// a field added to Member without a place in the key fails here, not in production
// by sharing members that differ in it.
func TestShareMembersKey(t *testing.T) {
	covered := map[string]bool{"ref": true, "Check": true, "ID": true, "Type": true, "Kind": true, "ETH": true,
		"Weight": true, "Role": true, "Default": true,
		"place": true} // members with one are not shared
	mt := reflect.TypeFor[member]()
	for i := range mt.NumField() {
		if f := mt.Field(i); !covered[f.Name] {
			t.Errorf("Member.%s is not in memberKey: add it, or say why sharing may ignore it", f.Name)
		}
	}
}

// TestSlab: values come zeroed, from shared chunks that grow, capped so that appending
// to one never writes over the next; a request too big for a chunk gets its own array.
func TestSlab(t *testing.T) {
	var s slab[int]
	a := s.take(3)
	b := s.take(2)
	next := uintptr(unsafe.Pointer(&a[0])) + 3*unsafe.Sizeof(a[0])
	if len(a) != 3 || cap(a) != 3 || len(b) != 2 || uintptr(unsafe.Pointer(&b[0])) != next {
		t.Fatalf("take(3), take(2): len %d cap %d and len %d, not neighbours in one chunk", len(a), cap(a), len(b))
	}
	a = append(a, 7)
	if b[0] != 0 {
		t.Error("appending to a value ran into its neighbour")
	}
	for i := range 3 * slabMax {
		if v := s.one(); *v != 0 {
			t.Fatalf("value %d is %d, want zero", i, *v)
		}
	}
	if s.size != slabMax {
		t.Errorf("after %d values the chunks hold %d, want %d", 3*slabMax, s.size, slabMax)
	}
	left := len(s.free)
	if big := s.take(slabMax); len(big) != slabMax || len(s.free) != left {
		t.Error("a large request took a chunk's place")
	}
}
