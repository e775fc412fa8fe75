package routing

import "github.com/miekg/dns"

// A reply is one allocation: the message, its question, and, for an answer built per
// query (a multivalue set's records, a CNAME chain), room for its records. The room
// is as small as the answer allows, since every byte of it is allocated and swept
// again per query: a multivalue answer of up to four members (nearly all of them)
// takes smallRoom, a larger one or a CNAME chain of up to maxChase steps
// largeRoom, with room to spare. A longer answer outgrows its room as any slice does.
const (
	smallRoom = 4
	largeRoom = 16
)

// ReplyMsg is a reply message with its question and its room, in one allocation.
type ReplyMsg struct {
	Msg dns.Msg
	// RRs is the room an answer built per query is built in: an array in the same
	// allocation (empty for a reply that needs none).
	RRs []dns.RR
	q   [1]dns.Question
}

// NewReplyMsg returns a reply with room for n records in the same allocation.
func NewReplyMsg(n int) *ReplyMsg {
	if n <= smallRoom {
		x := new(struct {
			ReplyMsg
			room [smallRoom]dns.RR
		})
		x.RRs = x.room[:]
		return &x.ReplyMsg
	}
	x := new(struct {
		ReplyMsg
		room [largeRoom]dns.RR
	})
	x.RRs = x.room[:]
	return &x.ReplyMsg
}

// SetReply makes m a reply to req as dns.Msg.SetReply does, with the question held in
// m's own array instead of a slice allocated for it.
func (m *ReplyMsg) SetReply(req *dns.Msg) *dns.Msg {
	r := &m.Msg
	r.Id, r.Response, r.Opcode = req.Id, true, req.Opcode
	if r.Opcode == dns.OpcodeQuery {
		r.RecursionDesired, r.CheckingDisabled = req.RecursionDesired, req.CheckingDisabled
	}
	r.Rcode = dns.RcodeSuccess
	if len(req.Question) > 0 {
		m.q[0] = req.Question[0]
		r.Question = m.q[:1:1]
	}
	return r
}

// room returns the free room to append an answer built per query to (length 0), in
// the reply, which it allocates with room for about n records the first time.
func (ans *Answer) room(n int) []dns.RR {
	if ans.buf == nil {
		if ans.Out == nil {
			ans.Out = NewReplyMsg(n)
		}
		ans.buf = ans.Out.RRs[:0]
	}
	return ans.buf[:0]
}
