package fleet

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"unicode/utf8"
)

// Message types. Every message starts with its type, then the originating member's
// name, epoch (a random number drawn at start: a restart makes a new epoch),
// sequence, send time and wake count.
// The types start at 5: 1-4 were those of the previous format (no wake count, wall
// clock send times), which this one ignores rather than misreads.
const (
	msgState byte = iota + 5 // a member's full report set: push-pull and pull replies
	msgDelta                 // one changed report, relayed epidemically
	msgBeat                  // a member is running: freshness and a digest of its reports
	msgPull                  // "send me your full state" (header only, names the asker)
)

// Report flags.
const (
	flagDown    = 1 << iota // the member's probes find the endpoint unhealthy
	flagStale               // the member stopped probing this check
	flagPending             // no verdict yet: the member's threshold window has not completed
)

var errShort = errors.New("fleet: truncated message")

// header is the start of every message.
type header struct {
	typ    byte
	name   string
	epoch  uint64 // drawn at random at start
	seq    uint64 // sender's sequence when sent
	sentAt uint64 // ms since the sender started, on its monotonic clock
	wake   uint64 // how many times the sender resumed from a stall (see stall)
}

// entry is one report on the wire: 8-byte check id, flags, the sequence at which it
// last changed and how long before sentAt the member last probed it (ms), which the
// receiver subtracts from its own receive time.
type entry struct {
	id    uint64
	flags byte
	seq   uint64
	age   uint64
}

// shortID is the 8-byte id of a check fingerprint on the wire. At 10,000 checks the
// chance that two collide is about 3e-12.
func shortID(fp string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(fp))
	return h.Sum64()
}

// mix scrambles a report for the order-independent digest of a member's reports.
func mix(id uint64, flags byte) uint64 {
	x := id + uint64(flags&(flagDown|flagStale|flagPending)+1)*0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func appendHeader(b []byte, h header) []byte {
	b = append(b, h.typ, byte(len(h.name)))
	b = append(b, h.name...)
	b = binary.AppendUvarint(b, h.epoch)
	b = binary.AppendUvarint(b, h.seq)
	b = binary.AppendUvarint(b, h.sentAt)
	return binary.AppendUvarint(b, h.wake)
}

func appendEntry(b []byte, e entry) []byte {
	b = binary.BigEndian.AppendUint64(b, e.id)
	b = append(b, e.flags)
	b = binary.AppendUvarint(b, e.seq)
	return binary.AppendUvarint(b, e.age)
}

// reader decodes a message; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = errShort
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) uint64() uint64 {
	if r.err != nil || len(r.b) < 8 {
		r.err = errShort
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) header() header {
	h := header{typ: r.byte()}
	n := int(r.byte())
	if r.err != nil || len(r.b) < n {
		r.err = errShort
		return h
	}
	h.name = string(r.b[:n])
	r.b = r.b[n:]
	h.epoch, h.seq, h.sentAt, h.wake = r.uvarint(), r.uvarint(), r.uvarint(), r.uvarint()
	return h
}

func (r *reader) entry() entry {
	return entry{id: r.uint64(), flags: r.byte(), seq: r.uvarint(), age: r.uvarint()}
}

// entries reads a count and that many entries; count is bounded by what the
// remaining bytes can hold (an entry is at least 11 bytes).
func (r *reader) entries() []entry {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)/11) {
		r.err = errShort
		return nil
	}
	out := make([]entry, 0, n)
	for range n {
		e := r.entry()
		if r.err != nil {
			return nil
		}
		out = append(out, e)
	}
	return out
}

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
func appendUint64(b []byte, v uint64) []byte  { return binary.BigEndian.AppendUint64(b, v) }

// Extensions follow a message's body: each is a tag, a length and that many bytes.
// Members of the previous version read the body and ignore what follows it, and a
// member skips the extensions it does not know, so a later version may add some.
const (
	extReasons byte = 1 // failure reasons of reports: a count, then per report its id, a length and the text
)

// MaxReason bounds a failure reason on the wire, in bytes; a longer one is cut at a
// character boundary and ends with "...".
const MaxReason = 120

// shortReason returns s cut to MaxReason bytes.
func shortReason(s string) string {
	if len(s) <= MaxReason {
		return s
	}
	cut := MaxReason - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// reason is a report's failure reason on the wire.
type reason struct {
	id   uint64
	text string
}

// appendReasons appends the extension carrying rs (nothing when rs is empty).
func appendReasons(b []byte, rs []reason) []byte {
	if len(rs) == 0 {
		return b
	}
	var p []byte
	p = binary.AppendUvarint(p, uint64(len(rs)))
	for _, r := range rs {
		p = binary.BigEndian.AppendUint64(p, r.id)
		p = binary.AppendUvarint(p, uint64(len(r.text)))
		p = append(p, r.text...)
	}
	b = append(b, extReasons)
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// extensions reads what follows a message's body: the reasons it carries. An
// extension that does not decode is dropped with those after it; the body stands.
func (r *reader) extensions() (rs []reason) {
	for r.err == nil && len(r.b) > 0 {
		tag, n := r.byte(), r.uvarint()
		if r.err != nil || n > uint64(len(r.b)) {
			return rs
		}
		p := reader{b: r.b[:n]}
		r.b = r.b[n:]
		if tag != extReasons {
			continue
		}
		count := p.uvarint()
		if p.err != nil || count > uint64(len(p.b)/9) { // a reason is at least 9 bytes
			return rs
		}
		for range count {
			id, l := p.uint64(), p.uvarint()
			if p.err != nil || l > MaxReason || l > uint64(len(p.b)) {
				return rs
			}
			rs = append(rs, reason{id: id, text: string(p.b[:l])})
			p.b = p.b[l:]
		}
	}
	return rs
}
