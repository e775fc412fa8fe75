package routing

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestShareMembersKey: the key that decides sharing covers every field of Member, so
// a field added to Member without a place in the key fails here, not in production
// by sharing members that differ in it.
func TestShareMembersKey(t *testing.T) {
	covered := map[string]bool{"Ref": true, "Check": true, "ID": true, "Type": true, "Kind": true, "ETH": true,
		"Weight": true, "Role": true, "Default": true,
		"Place": true} // members with one are not shared
	mt := reflect.TypeFor[Member]()
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
