package routing

import (
	"reflect"
	"testing"

	"github.com/miekg/dns"
)

// TestReplySetReplyAsMiekg: ReplyMsg.SetReply makes the reply dns.Msg.SetReply makes,
// for queries and other opcodes, with and without a question, and its question is a
// copy the request does not share.
func TestReplySetReplyAsMiekg(t *testing.T) {
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeAAAA)
	q.Id, q.RecursionDesired, q.CheckingDisabled, q.AuthenticatedData = 4242, true, true, true
	notify := q.Copy()
	notify.Opcode = dns.OpcodeNotify
	empty := q.Copy()
	empty.Question = nil
	for _, req := range []*dns.Msg{q, notify, empty} {
		want := new(dns.Msg).SetReply(req)
		for _, reply := range []*ReplyMsg{new(ReplyMsg), NewReplyMsg(1), NewReplyMsg(9)} {
			got := reply.SetReply(req)
			if got != &reply.Msg {
				t.Fatalf("SetReply returned %p, not the reply's own message %p", got, &reply.Msg)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("opcode %d, %d questions: reply\n%+v\nwant\n%+v", req.Opcode, len(req.Question), got, want)
			}
			if len(got.Question) > 0 && &got.Question[0] == &req.Question[0] {
				t.Errorf("the reply shares the request's question")
			}
		}
	}
}

// TestReplyRoomFitsTheAnswer: a reply holds room for the answer it is made for, small
// for a multivalue set of up to four members, large beyond.
func TestReplyRoomFitsTheAnswer(t *testing.T) {
	for _, c := range []struct{ n, room int }{{0, smallRoom}, {3, smallRoom}, {smallRoom, smallRoom}, {5, largeRoom}, {maxMultivalue, largeRoom}} {
		var ans Answer
		if got := cap(ans.room(c.n)); got != c.room {
			t.Errorf("room for %d records: %d, want %d", c.n, got, c.room)
		}
		if again := cap(ans.room(100)); again != c.room {
			t.Errorf("room asked again: %d, want the same room of %d", again, c.room)
		}
	}
}
