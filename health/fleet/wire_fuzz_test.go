package fleet

import (
	"errors"
	"testing"

	"github.com/hashicorp/memberlist"
)

// FuzzHandle feeds arbitrary bytes to a member as gossip from another member (after
// decryption: what a holder of the key could send). Nothing may panic, and the
// member's bookkeeping must stay consistent: each peer's digest is the digest of the
// reports held for it, and a report's sequence never exceeds the peer's.
func FuzzHandle(f *testing.F) {
	src, _ := New(Config{Name: "peer", Insecure: true})
	for i := range 5 {
		src.Local(string(rune('a'+i)), status(i%2 == 0))
	}
	src.Probed("a", errors.New("connection refused"))
	src.epoch = 7
	f.Add(src.stateMsg())
	f.Add(src.beatMsg(src.now()).msg)
	f.Add(src.pullMsg())
	h := header{typ: msgDelta, name: "peer", epoch: 7, seq: 9, sentAt: 1}
	f.Add(appendEntry(appendHeader(nil, h), entry{id: shortID("a"), flags: flagDown, seq: 9, age: 3}))
	f.Add(appendReasons(appendEntry(appendHeader(nil, h), entry{id: shortID("a"), flags: flagDown, seq: 9, age: 3}), []reason{{id: shortID("a"), text: "HTTP 503"}}))
	f.Add([]byte{msgState, 4, 'p', 'e', 'e', 'r', 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := New(Config{Name: "self", Insecure: true, Quorum: DefaultQuorum})
		if err != nil {
			t.Fatal(err)
		}
		m.alive["peer"] = memberlist.Node{Name: "peer"}
		m.Local("a", status(false))
		m.handle(b, true)
		m.handle(b, false) // the same message again (relayed) changes nothing more
		m.Status("a", status(false))
		m.View("a")
		for name, p := range m.peers {
			var d uint64
			for id, r := range p.reports {
				d += mix(id, r.flags)
				if r.seq > p.seq {
					t.Fatalf("%s: report seq %d above the peer's %d", name, r.seq, p.seq)
				}
			}
			if d != p.digest {
				t.Fatalf("%s: digest %x, reports sum to %x", name, p.digest, d)
			}
		}
		// A header that decodes re-encodes to one that decodes the same.
		r := reader{b: b}
		if h := r.header(); r.err == nil {
			r2 := reader{b: appendHeader(nil, h)}
			if h2 := r2.header(); r2.err != nil || h2 != h {
				t.Fatalf("header %+v re-decodes as %+v (%v)", h, h2, r2.err)
			}
		}
	})
}
