package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/healthroute/healthroute/internal/atomicfile"
	"github.com/healthroute/healthroute/internal/connlimit"
)

// DefaultPort is the control port's default.
const DefaultPort = 7947

// Server is one voter: its member name and control address.
type Server struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// Config is what a node needs to open its data directory and join the voters.
type Config struct {
	Name   string   // this member's name (the fleet's), its raft ID
	Bind   string   // the control port, HOST:PORT; also the address the others dial
	Voters []Server // every voter, this one included; nil: this member alone
	Dir    string   // data directory
	Key    []byte   // the fleet key: the control port's TLS keys derive from it (nil: from an empty key)
}

// Policy is what the configuration says a change may do: the rules, the controls
// and the checks it may override. The leader's is stamped into every command.
type Policy struct {
	Rules    []Rule
	Controls []string
	Checks   []string
}

// Request is a change (or, with Read, a consistent read) as an API receives it.
type Request struct {
	Token      string            `json:"token"`
	Member     string            `json:"member"`
	Reason     string            `json:"reason,omitempty"`
	Set        map[string]bool   `json:"set,omitempty"`
	Override   map[string]string `json:"override,omitempty"`
	BreakGlass []string          `json:"break_glass,omitempty"`
	Read       bool              `json:"read,omitempty"`
	API        *APICommand       `json:"api,omitempty"`
	Shift      *ShiftCommand     `json:"shift,omitempty"`
	ARC        *ARCCommand       `json:"arc,omitempty"`
}

// reply is the leader's answer to a forwarded request.
type reply struct {
	Err      string   `json:"error,omitempty"`
	Rule     string   `json:"rule,omitempty"`
	Code     string   `json:"code,omitempty"`
	Messages []string `json:"messages,omitempty"`
	Refused  bool     `json:"refused,omitempty"`
	Quorum   bool     `json:"quorum,omitempty"`  // the leader lost its majority
	Unknown  bool     `json:"unknown,omitempty"` // ... after the change was proposed
	State    *State   `json:"state,omitempty"`
	Index    uint64   `json:"index,omitempty"` // the raft index the change was applied at
}

// ErrNoQuorum matches errors of changes refused because this member reaches no
// majority of the voters.
var ErrNoQuorum = errors.New("no quorum")

// QuorumError is a change refused for want of a majority. Unknown is set when the
// change had been proposed when the leader lost its majority: it may still apply
// if that leader regains it; otherwise it was never proposed and has no effect.
type QuorumError struct {
	Msg     string
	Unknown bool
}

func (e *QuorumError) Error() string        { return e.Msg }
func (e *QuorumError) Is(target error) bool { return target == ErrNoQuorum }

// Timeouts of changes.
const (
	applyTimeout   = 3 * time.Second // a change's whole time at the leader
	forwardTimeout = 4 * time.Second // a forwarded change's, dial to reply
	dialTimeout    = time.Second
)

// Node is this member's raft node over the replicated state.
type Node struct {
	cfg        Config
	fsm        *fsm
	raft       *raft.Raft
	ready      chan struct{} // closed once raft is set: the control port accepts before
	mux        *mux
	trans      closingTransport
	closeStore func() // the raft log, its meta database and the directory's lock
	policy     atomic.Pointer[Policy]
	closed     sync.Once

	changes, refusals atomic.Uint64
	knewLeader        atomic.Bool // a leader was known since this member started
}

// identity is what the data directory says it belongs to.
type identity struct {
	Fleet  string `json:"fleet"`
	Member string `json:"member"`
}

const identityFile = "identity.json"

// FleetID names the fleet a data directory belongs to: a digest of the fleet key
// (never the key), "no-key" without one.
func FleetID(key []byte) string {
	if len(key) == 0 {
		return "no-key"
	}
	sum := sha256.Sum256(append([]byte("healthroute control fleet\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// checkIdentity refuses a data directory of another fleet or member, and marks a
// new one as this member's.
func checkIdentity(cfg Config) error {
	want := identity{Fleet: FleetID(cfg.Key), Member: cfg.Name}
	path := filepath.Join(cfg.Dir, identityFile)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		entries, _ := os.ReadDir(cfg.Dir)
		entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { // what openDir made itself
			if e.Name() == walDir { // made by an earlier version
				inWAL, _ := os.ReadDir(filepath.Join(cfg.Dir, walDir))
				return len(inWAL) == 0
			}
			return e.Name() == "lock"
		})
		if len(entries) > 0 {
			return fmt.Errorf("data directory %s holds files but no %s: not a healthroute control directory, or a damaged one (move it away to start empty)", cfg.Dir, identityFile)
		}
		b, _ = json.Marshal(want)
		return atomicfile.Write(path, b, 0o600)
	}
	if err != nil {
		return err
	}
	var have identity
	if err := json.Unmarshal(b, &have); err != nil {
		return fmt.Errorf("%s is corrupt: %v", path, err)
	}
	if have.Fleet != want.Fleet {
		return fmt.Errorf("data directory %s belongs to another fleet (fleet id %s, this key's is %s): point data_dir at this fleet's directory, or move it away to start empty", cfg.Dir, have.Fleet, want.Fleet)
	}
	if have.Member != want.Member {
		return fmt.Errorf("data directory %s belongs to member %s, this member is %s", cfg.Dir, have.Member, want.Member)
	}
	return nil
}

// Open opens (creating it when missing) the data directory, loads the state this
// member last applied, calls onChange with it, and starts the raft node: on first
// start every voter bootstraps the same configuration. onChange is called after
// every later change, from raft's goroutine.
func Open(cfg Config, onChange func(*State)) (*Node, error) {
	if len(cfg.Voters) == 0 {
		addr := cfg.Bind
		if addr == "" {
			addr = "in-process"
		}
		cfg.Voters = []Server{{ID: cfg.Name, Addr: addr}}
	}
	if cfg.Bind == "" && len(cfg.Voters) > 1 {
		return nil, errors.New("control port: missing, expected bind ADDRESS:PORT to reach the other voters")
	}
	if !slices.ContainsFunc(cfg.Voters, func(s Server) bool { return s.ID == cfg.Name }) {
		cfg.Voters = append(cfg.Voters, Server{ID: cfg.Name, Addr: cfg.Bind})
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "healthroute control", Level: hclog.Warn, Output: os.Stderr, Exclude: firstElection})
	f, ds, err := openDir(cfg, logger)
	if err != nil {
		return nil, err
	}
	store, snaps, closeStore := ds.store, ds.snaps, ds.close
	n := &Node{cfg: cfg, fsm: f, closeStore: closeStore, ready: make(chan struct{})}
	n.policy.Store(&Policy{})
	if cfg.Bind == "" { // a single voter without a control port
		_, n.trans = raft.NewInmemTransport(raft.ServerAddress(cfg.Voters[0].Addr))
	} else {
		ln, err := net.Listen("tcp", cfg.Bind)
		if err != nil {
			closeStore()
			return nil, fmt.Errorf("control port: %v", err)
		}
		n.mux = newMux(connlimit.New(ln, "control port", maxConns, maxConnsPerClient, logLimited), cfg.Key, cfg.Name, cfg.Voters, n.serveForward,
			func() { handshakeRefused.Inc() })
		n.trans = newVoteGate(raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: n.mux, MaxPool: 3, Timeout: 2 * time.Second, Logger: logger,
			ServerAddressProvider: n.mux}), f.mayVote, store.mayStand)
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.Name)
	rc.Logger = logger
	if len(cfg.Voters) == 1 {
		// One voter has no one to hear from: its timers only say how soon it elects
		// itself at start, which the server's readiness waits for (singleVoterElection).
		rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	}
	fail := func(err error) (*Node, error) {
		n.trans.Close()
		closeStore()
		return nil, err
	}
	f.store = store
	mayBootstrap, err := openState(cfg, f, store, snaps)
	if err != nil {
		return fail(err)
	}
	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return fail(fmt.Errorf("raft log in %s: %v", cfg.Dir, err))
	}
	if !has && mayBootstrap {
		var c raft.Configuration
		for _, s := range cfg.Voters {
			c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.Addr)})
		}
		if err := raft.BootstrapCluster(rc, store, store, snaps, n.trans, c); err != nil {
			return fail(fmt.Errorf("bootstrapping the voters: %v", err))
		}
	}
	st := f.state()
	if onChange != nil {
		onChange(st)
	}
	if !f.rebuild { // a state the log does not hold: what it serves counts as nothing applied
		f.done.Store(st.Index)
	}
	f.onChange = func(s *State) {
		observe(n, s)
		if onChange != nil {
			onChange(s)
		}
	}
	observe(n, st)
	r, err := newRaft(rc, f, store, snaps, n.trans)
	if err != nil {
		return fail(fmt.Errorf("starting raft: %v", err))
	}
	n.raft = r
	close(n.ready)
	current.Store(n)
	if len(cfg.Voters) == 1 {
		n.awaitLeadership(singleVoterElection)
	}
	return n, nil
}

// singleVoterElection bounds how long Open waits for a single voter to elect
// itself, so that a server reports ready only once a change can apply.
const singleVoterElection = 10 * time.Second

// awaitLeadership waits (up to within) until this member leads.
func (n *Node) awaitLeadership(within time.Duration) {
	t := time.NewTimer(within)
	defer t.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for n.raft.State() != raft.Leader {
		select {
		case <-t.C:
			log.Warningf("control: the single voter %s did not elect itself within %s; changes wait for it", n.cfg.Name, within)
			return
		case <-tick.C:
		}
	}
}

// newRaft starts raft, turning a panic on what it reads at start into an error.
func newRaft(rc *raft.Config, f *fsm, store *logStore, snaps raft.SnapshotStore, trans raft.Transport) (r *raft.Raft, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("%v", p)
		}
	}()
	return raft.NewRaft(rc, f, store, store, snaps, trans)
}

// dataDir is an open data directory: its raft log and snapshot stores, and how to
// close them and release the directory's lock.
type dataDir struct {
	store *logStore
	snaps raft.SnapshotStore
	close func()
}

// openDir locks cfg.Dir (creating it when missing), checks it is this fleet's and
// this member's, loads the state last applied and opens the raft log (moving an
// earlier version's into it) and snapshots.
func openDir(cfg Config, logger hclog.Logger) (*fsm, *dataDir, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("data directory: %v", err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*fsm, *dataDir, error) {
		lock.Close()
		return nil, nil, err
	}
	if err := checkIdentity(cfg); err != nil {
		return fail(err)
	}
	f, err := loadFSM(cfg.Dir)
	if err != nil {
		return fail(err)
	}
	store, err := openLogStore(filepath.Join(cfg.Dir, logFile))
	if err != nil {
		// Not the whole directory: state.json kept, the member refuses votes until it
		// has the log back up to it (voteGate); empty, it would vote at once, for a
		// candidate missing what it had acknowledged.
		return fail(fmt.Errorf("raft log: %v (move %s away, keeping the rest of the directory, to start this member without its log: it answers from %s, the other voters send it the log, and it votes again once it has applied it)", err, logFile, stateFile))
	}
	d := &dataDir{store: store, close: func() {
		store.Close()
		lock.Close()
	}}
	if err := migrateWAL(cfg.Dir, store, logger); err != nil {
		d.close()
		return nil, nil, err
	}
	if d.snaps, err = raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "snapshots"), 2, logger); err != nil {
		d.close()
		return nil, nil, fmt.Errorf("snapshots in %s: %v", cfg.Dir, err)
	}
	return f, d, nil
}

// Name returns this member's name.
func (n *Node) Name() string { return n.cfg.Name }

// Addr returns the control port's address, "" without one.
func (n *Node) Addr() string {
	if n.mux == nil {
		return ""
	}
	return n.mux.Addr().String()
}

// SetPolicy replaces the rules, controls and checks this member stamps into the
// changes it leads (on reload).
func (n *Node) SetPolicy(p Policy) {
	n.policy.Store(&p)
	observe(n, n.fsm.state())
}

// Policy returns the rules, controls and checks this member stamps into the
// changes it leads: its configuration's, as SetPolicy last gave them.
func (n *Node) Policy() Policy { return *n.policy.Load() }

// State returns a copy of the state as this member last applied it: local, never
// waiting for the network.
func (n *Node) State() *State { return n.fsm.state() }

// API returns the API's part of the state as this member last applied it, nil
// before any API command. It is shared, not copied: an applied command replaces
// the APIState whole and never changes one in place, so callers must only read it.
func (n *Node) API() *APIState {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.fsm.st.API
}

// Close stops the node; the data directory keeps the state.
func (n *Node) Close() {
	n.closed.Do(func() {
		if err := n.raft.Shutdown().Error(); err != nil {
			log.Warningf("control: stopping raft: %v", err)
		}
		n.trans.Close()
		n.closeStore()
		current.CompareAndSwap(n, nil)
	})
}

// Change applies req through the leader and returns nil, a *Refusal naming the
// rule it would break, a *QuorumError, or another error when the outcome is not
// known (the leader went away after receiving it).
func (n *Node) Change(ctx context.Context, req Request) error {
	_, err := n.do(ctx, req)
	if req.API != nil { // the Route 53 API's commands are not control changes
		return err
	}
	if err == nil {
		changesTotal.Inc()
	} else if errors.Is(err, ErrRefused) || errors.Is(err, ErrNoQuorum) {
		refusalsTotal.WithLabelValues(refusalRule(err)).Inc()
	}
	return err
}

// ReadConsistent returns the state as of a moment between the call and its
// return, confirmed by the leader and a majority (for linearizable reads; DNS
// reads the local state instead).
func (n *Node) ReadConsistent(ctx context.Context) (*State, error) {
	return n.do(ctx, Request{Read: true})
}

func (n *Node) do(ctx context.Context, req Request) (*State, error) {
	if n.raft.State() == raft.Leader {
		rep := n.lead(req)
		return rep.State, rep.err()
	}
	addr, id := n.leader(ctx)
	if addr == "" {
		return nil, n.noQuorum("this member reaches no leader")
	}
	if id == raft.ServerID(n.cfg.Name) || n.mux == nil { // elected meanwhile
		rep := n.lead(req)
		return rep.State, rep.err()
	}
	for _, v := range n.cfg.Voters { // the address this member's configuration gives it
		if v.ID == string(id) {
			addr = raft.ServerAddress(v.Addr)
		}
	}
	c, err := n.mux.dial(string(addr), kindForward, dialTimeout)
	if err != nil {
		return nil, n.noQuorum(fmt.Sprintf("its leader %s (%s) does not answer: %v", id, addr, err))
	}
	defer c.Close()
	deadline := time.Now().Add(forwardTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	if err := json.NewEncoder(c).Encode(req); err != nil {
		qe := n.noQuorum(fmt.Sprintf("its leader %s (%s) does not answer: %v", id, addr, err)).(*QuorumError)
		qe.Unknown = true // part of it may have reached the leader
		return nil, qe
	}
	var rep reply
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		return nil, fmt.Errorf("the leader %s did not reply (%v): the change may or may not have been applied; read the state before retrying", id, err)
	}
	n.awaitApplied(ctx, rep.Index)
	return rep.State, rep.err()
}

// awaitApplied waits (up to applyTimeout) until this member has applied index
// and serves it, so that what it answers next, its DNS and its APIs' reads (a
// zonal shift just canceled, a record set just changed), shows a change the API
// has said is applied.
func (n *Node) awaitApplied(ctx context.Context, index uint64) {
	if index == 0 || n.fsm.done.Load() >= index {
		return
	}
	t := time.NewTimer(applyTimeout)
	defer t.Stop()
	for {
		ch := n.fsm.appliedChan() // taken before the check: a move after it closes ch
		if n.fsm.done.Load() >= index {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// electionWait is how long a change waits for a leader when none is known: an
// election on a healthy majority ends well within it. startElectionWait is the
// wait of a member that has known no leader since it started: the first election
// after a start also waits out raft's first heartbeat timeout (1-2 s), and a
// change sent as the member starts should not fail for that.
const (
	electionWait      = time.Second
	startElectionWait = 5 * time.Second
)

// leader returns the leader's address and ID, waiting up to electionWait (or
// startElectionWait) for one.
func (n *Node) leader(ctx context.Context) (raft.ServerAddress, raft.ServerID) {
	addr, id := n.raft.LeaderWithID()
	if addr != "" {
		n.knewLeader.Store(true)
		return addr, id
	}
	wait := electionWait
	if !n.knewLeader.Load() {
		wait = startElectionWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for addr == "" {
		select {
		case <-t.C:
			return "", ""
		case <-ctx.Done():
			return "", ""
		case <-tick.C:
			addr, id = n.raft.LeaderWithID()
		}
	}
	n.knewLeader.Store(true)
	return addr, id
}

func (r reply) err() error {
	switch {
	case r.Err == "":
		return nil
	case r.Refused:
		return &Refusal{Rule: r.Rule, Reason: r.Err, Code: r.Code, Messages: r.Messages}
	case r.Quorum:
		return &QuorumError{Msg: r.Err, Unknown: r.Unknown}
	}
	return errors.New(r.Err)
}

// lead applies req as the leader.
func (n *Node) lead(req Request) reply {
	if req.Read {
		if err := n.raft.VerifyLeader().Error(); err != nil {
			return reply{Err: n.noQuorum("the leader lost its majority: " + err.Error()).Error(), Quorum: true}
		}
		if err := n.raft.Barrier(applyTimeout).Error(); err != nil {
			return reply{Err: n.noQuorum("the leader lost its majority: " + err.Error()).Error(), Quorum: true}
		}
		return reply{State: n.fsm.state()}
	}
	p := n.policy.Load()
	cmd := Command{Time: time.Now().UTC(), Token: req.Token, Member: req.Member, Reason: req.Reason, Set: req.Set,
		Override: req.Override, BreakGlass: req.BreakGlass, Rules: p.Rules, Controls: p.Controls, Checks: p.Checks, API: req.API, Shift: req.Shift, ARC: req.ARC}
	b, err := json.Marshal(cmd)
	if err != nil {
		return reply{Err: err.Error()}
	}
	f := n.raft.Apply(b, applyTimeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrEnqueueTimeout) {
			unknown := errors.Is(err, raft.ErrLeadershipLost) // proposed; ErrNotLeader and ErrEnqueueTimeout: never appended
			why := "this member's leader lost its leadership before the change was proposed: "
			if unknown {
				why = "the leader lost its majority before the change committed (it may still commit if that leader regains it): "
			}
			return reply{Err: n.noQuorum(why + err.Error()).Error(), Quorum: true, Unknown: unknown}
		}
		return reply{Err: err.Error()}
	}
	if resp, ok := f.Response().(error); ok && resp != nil {
		var ref *Refusal
		if errors.As(resp, &ref) {
			return reply{Err: ref.Reason, Rule: ref.Rule, Code: ref.Code, Messages: ref.Messages, Refused: true, Index: f.Index()}
		}
		return reply{Err: resp.Error(), Index: f.Index()}
	}
	return reply{Index: f.Index()}
}

// serveForward answers one forwarded request on c.
func (n *Node) serveForward(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(forwardTimeout))
	var req Request
	if err := json.NewDecoder(c).Decode(&req); err != nil {
		return
	}
	var rep reply
	if !n.started() {
		// The control port accepts from the moment it is bound, before raft runs: a
		// member restarting at a leader's address gets the requests sent to it.
		rep = reply{Err: n.noQuorum("the member it was sent to is starting").Error(), Quorum: true}
	} else if n.raft.State() != raft.Leader {
		rep = reply{Err: n.noQuorum("the member it was sent to is no longer the leader").Error(), Quorum: true}
	} else {
		rep = n.lead(req)
	}
	json.NewEncoder(c).Encode(rep)
}

// noQuorum builds the error of a change refused for want of a majority, naming
// the quorum it lacks.
func (n *Node) noQuorum(why string) error {
	var names []string
	for _, s := range n.cfg.Voters {
		names = append(names, s.ID)
	}
	contact := ""
	if lc := n.lastContact(); lc > 0 {
		contact = " (last contact with a leader: " + lc.Round(time.Millisecond).String() + " ago)"
	}
	return &QuorumError{Msg: fmt.Sprintf("refused: no quorum: a change needs %d of the %d voters (%s) and %s%s; this member keeps answering from the state it has",
		len(names)/2+1, len(names), strings.Join(names, ", "), why, contact)}
}

// lastContact is how long ago this member last heard from a leader (0: never, or
// raft not started yet).
func (n *Node) lastContact() time.Duration {
	if !n.started() {
		return 0
	}
	return n.Status().LastContact
}

// started reports whether raft runs (n.raft is set).
func (n *Node) started() bool {
	select {
	case <-n.ready:
		return true
	default:
		return false
	}
}

// Status is what this member knows of the raft group.
type Status struct {
	Member      string        `json:"member"`
	State       string        `json:"raft_state"` // Leader, Follower, Candidate, Shutdown
	Leader      string        `json:"leader"`     // "" when none is known
	Term        uint64        `json:"term"`
	CommitIndex uint64        `json:"commit_index"`
	Applied     uint64        `json:"applied_index"`   // the last entry the state served shows (not raft's: entries queued for it)
	LastContact time.Duration `json:"last_contact_ns"` // with the leader; 0 for the leader or never
	CanChange   bool          `json:"can_change"`      // a change through this member can reach a leader with a majority now
	Voters      []Server      `json:"voters"`
	Quorum      int           `json:"quorum"`
}

// Status reports this member's view of the raft group, locally.
func (n *Node) Status() Status {
	s := n.raft.Stats()
	num := func(k string) uint64 { v, _ := strconv.ParseUint(s[k], 10, 64); return v }
	_, id := n.raft.LeaderWithID()
	if id != "" {
		n.knewLeader.Store(true)
	}
	st := Status{Member: n.cfg.Name, State: s["state"], Leader: string(id), Term: num("term"), CommitIndex: num("commit_index"),
		Applied: n.fsm.shown(num("applied_index")), Voters: n.cfg.Voters, Quorum: len(n.cfg.Voters)/2 + 1}
	if lc, err := time.ParseDuration(s["last_contact"]); err == nil {
		st.LastContact = lc
	}
	switch n.raft.State() {
	case raft.Leader:
		// A leader that lost its majority steps down within the lease (500 ms).
		st.CanChange = true
	case raft.Follower:
		st.CanChange = id != "" && st.LastContact < time.Second // raft's heartbeat timeout
	}
	return st
}

// closingTransport is raft's transport with its Close: the network one on the
// control port, or the in-process one of a single voter without a port.
type closingTransport interface {
	raft.Transport
	Close() error
}

// firstElection reports whether a raft log line is the warning raft writes when a
// member that has never heard of a leader starts an election: every start of a
// voter writes it, so it warns of nothing. The same line after a leader was known
// (a leader lost) is kept.
func firstElection(level hclog.Level, msg string, args ...any) bool {
	if level != hclog.Warn || msg != "heartbeat timeout reached, starting election" {
		return false
	}
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "last-leader-id" {
			return fmt.Sprint(args[i+1]) == ""
		}
	}
	return false
}
