package control

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// voteGate is raft's network transport with the vote requests of a member whose
// log was lost refused until it has applied the log up to the state it had.
// Raft's safety needs every voter to keep what it acknowledged: a member that
// lost its log would grant its vote to a candidate missing committed entries
// (an empty log is behind every candidate), and with one other stale voter that
// candidate would win and overwrite changes acknowledged to clients. The member
// still receives the log; it only does not vote until it holds what it held.
//
// It also keeps a member from asking for votes while its disk refuses its log
// (mayStand): it could not lead.
type voteGate struct {
	*raft.NetworkTransport
	mayVote  func() bool
	mayStand func() bool
	out      chan raft.RPC
	done     chan struct{}
	once     sync.Once
}

func newVoteGate(t *raft.NetworkTransport, mayVote, mayStand func() bool) *voteGate {
	g := &voteGate{NetworkTransport: t, mayVote: mayVote, mayStand: mayStand, out: make(chan raft.RPC), done: make(chan struct{})}
	go g.loop()
	return g
}

// errCannotLead is a vote request not sent: this member's disk refuses its log.
var errCannotLead = errors.New("not asking for votes: this member's raft log refuses writes (disk full?)")

// RequestVote implements raft.Transport, sending nothing while mayStand is false.
func (g *voteGate) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if !g.mayStand() {
		return errCannotLead
	}
	return g.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote implements raft.WithPreVote, as RequestVote.
func (g *voteGate) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if !g.mayStand() {
		return errCannotLead
	}
	return g.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// Consumer implements raft.Transport.
func (g *voteGate) Consumer() <-chan raft.RPC { return g.out }

// Close implements closingTransport.
func (g *voteGate) Close() error {
	g.once.Do(func() { close(g.done) })
	return g.NetworkTransport.Close()
}

func (g *voteGate) loop() {
	in := g.NetworkTransport.Consumer()
	for {
		select {
		case rpc := <-in:
			switch req := rpc.Command.(type) { // mayVote takes the state machine's lock: asked of votes only
			case *raft.RequestVoteRequest:
				if !g.mayVote() {
					votesRefused.Inc()
					rpc.Respond(&raft.RequestVoteResponse{RPCHeader: req.RPCHeader, Term: req.Term}, nil)
					continue
				}
			case *raft.RequestPreVoteRequest:
				if !g.mayVote() {
					votesRefused.Inc()
					rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: req.RPCHeader, Term: req.Term}, nil)
					continue
				}
			}
			select {
			case g.out <- rpc:
			case <-g.done:
				return
			}
		case <-g.done:
			return
		}
	}
}
