package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/hashicorp/memberlist"

	"github.com/healthroute/healthroute/health"
)

func init() { clog.Discard() }

var testKey = []byte("0123456789abcdef0123456789abcdef")

// netsim is the loopback network of a test: it counts every byte members send, can
// split them into two groups that cannot reach each other, and can drop datagrams.
type netsim struct {
	mu    sync.Mutex
	group map[string]int  // address -> group, while split
	cut   map[string]bool // addresses cut off from every other (a frozen process)
	loss  float64         // share of datagrams dropped
	delay time.Duration   // added to every datagram, as between regions
	bytes atomic.Int64
}

// slow delays every datagram (not streams) by d.
func (n *netsim) slow(d time.Duration) {
	n.mu.Lock()
	n.delay = d
	n.mu.Unlock()
}

func (n *netsim) latency() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.delay
}

// lossy drops datagrams (not streams) at random, each with probability p.
func (n *netsim) lossy(p float64) {
	n.mu.Lock()
	n.loss = p
	n.mu.Unlock()
}

func (n *netsim) drop() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.loss > 0 && rand.Float64() < n.loss
}

func (n *netsim) split(groups ...[]*Fleet) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.group = map[string]int{}
	for g, ms := range groups {
		for _, m := range ms {
			n.group[m.Addr()] = g
		}
	}
}

func (n *netsim) heal() {
	n.mu.Lock()
	n.group = nil
	n.mu.Unlock()
}

// isolate cuts m off from every other member (on) or connects it again (off).
func (n *netsim) isolate(m *Fleet, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut == nil {
		n.cut = map[string]bool{}
	}
	n.cut[m.Addr()] = on
}

func (n *netsim) blocked(from, to string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut[from] || n.cut[to] {
		return true
	}
	if n.group == nil {
		return false
	}
	gf, ok1 := n.group[from]
	gt, ok2 := n.group[to]
	return ok1 && ok2 && gf != gt
}

// simTransport is a memberlist transport that drops what the netsim blocks and counts
// the rest: packets when sent, streams in both directions on the dialling side.
type simTransport struct {
	memberlist.NodeAwareTransport
	net  *netsim
	self string
}

var errBlocked = errors.New("partitioned")

func (t *simTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.net.blocked(t.self, addr) || t.net.drop() {
		return time.Now(), nil
	}
	t.net.bytes.Add(int64(len(b)))
	if d := t.net.latency(); d > 0 {
		c := slices.Clone(b)
		time.AfterFunc(d, func() { t.NodeAwareTransport.WriteTo(c, addr) })
		return time.Now(), nil
	}
	return t.NodeAwareTransport.WriteTo(b, addr)
}

func (t *simTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if t.net.blocked(t.self, a.Addr) || t.net.drop() {
		return time.Now(), nil
	}
	t.net.bytes.Add(int64(len(b)))
	if d := t.net.latency(); d > 0 {
		c := slices.Clone(b)
		time.AfterFunc(d, func() { t.NodeAwareTransport.WriteToAddress(c, a) })
		return time.Now(), nil
	}
	return t.NodeAwareTransport.WriteToAddress(b, a)
}

func (t *simTransport) DialTimeout(addr string, d time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, d)
}

func (t *simTransport) DialAddressTimeout(a memberlist.Address, d time.Duration) (net.Conn, error) {
	if t.net.blocked(t.self, a.Addr) {
		return nil, errBlocked
	}
	c, err := t.NodeAwareTransport.DialAddressTimeout(a, d)
	if err != nil {
		return nil, err
	}
	return &countConn{Conn: c, n: &t.net.bytes}, nil
}

type countConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// fast shortens memberlist's timers, for the tests that need memberlist itself to
// declare members dead (it takes about 30 s at the WAN profile's timers); each
// says so where it uses them.
func fast(c *memberlist.Config) {
	c.ProbeInterval = 200 * time.Millisecond
	c.ProbeTimeout = 100 * time.Millisecond
	c.GossipInterval = 30 * time.Millisecond
	c.PushPullInterval = time.Second
	c.SuspicionMult = 2
	c.TCPTimeout = 500 * time.Millisecond
	c.GossipToTheDeadTime = time.Second
	c.DeadNodeReclaimTime = 100 * time.Millisecond
}

type member struct {
	name            string
	bind            netip.AddrPort
	advertise       netip.AddrPort // zero: none (the bind address)
	key             []byte
	join            []string
	beat, suspicion time.Duration            // 0: the defaults
	maxBackoff      time.Duration            // 0: the default
	tune            func(*memberlist.Config) // nil: the WAN profile's timers
	onChecks        func([]string)
	onChange        func()
	onStale         func([]string)
	onMoved         func(f *Fleet)   // nil: none; told which member the placement moved on
	clock           func() time.Time // nil: time.Now (a test that freezes a member's time sets it)
	wall            func() time.Time // nil: time.Now (a test that sets a member's clock off sets it)
	region          string
	role            Role
	regions         []string // cluster: member i is in regions[i%len(regions)]
	mem             *memNet  // nil: loopback sockets; else this network in memory (on a fake clock)
}

// start starts a member on loopback; it is stopped at cleanup.
func start(t testing.TB, n *netsim, m member) *Fleet {
	t.Helper()
	if !m.bind.IsValid() {
		m.bind = netip.MustParseAddrPort("127.0.0.1:0")
	}
	cfg := Config{Name: m.name, Bind: m.bind, Advertise: m.advertise, Key: m.key, Insecure: m.key == nil, Quorum: DefaultQuorum,
		Beat: m.beat, Suspicion: m.suspicion, MaxBackoff: m.maxBackoff, tune: m.tune, Region: m.region, Role: m.role}
	for _, j := range m.join {
		cfg.Join = append(cfg.Join, netip.MustParseAddrPort(j))
	}
	if m.mem != nil {
		cfg.listen = m.mem.listen
	}
	if n != nil {
		cfg.wrap = func(nt memberlist.NodeAwareTransport) memberlist.NodeAwareTransport {
			port := nt.(*transport).Port()
			self := netip.AddrPortFrom(m.bind.Addr(), uint16(port)).String()
			return &simTransport{NodeAwareTransport: nt, net: n, self: self}
		}
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.OnChecks, f.OnChange, f.OnStale = m.onChecks, m.onChange, m.onStale
	if m.onMoved != nil {
		f.OnMoved = func() { m.onMoved(f) }
	}
	if m.clock != nil {
		f.now = m.clock
	}
	if m.wall != nil {
		f.wall = m.wall
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return f
}

// cluster starts size members like tmpl, each joining the first. Each binds its own
// loopback address (127.0.0.1, .2, ...), as members on their own hosts do, so the
// gossip port's limits per address apply as they would.
func cluster(t testing.TB, n *netsim, size int, tmpl member) []*Fleet {
	t.Helper()
	var ms []*Fleet
	for i := range size {
		m := tmpl
		m.name, m.key = fmt.Sprintf("m%02d", i), testKey
		if len(tmpl.regions) > 0 {
			m.region = tmpl.regions[i%len(tmpl.regions)]
		}
		m.bind = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)}), 0)
		if i > 0 {
			m.join = []string{ms[0].Addr()}
		}
		if m.mem != nil && i > 0 {
			// On the fake clock members started together would beat at the same
			// instants, every one of them, as no fleet of processes does: each
			// starts at its own offset in a beat, as processes started by hand
			// or by an orchestrator do. (Fake time: this sleep waits for nothing.)
			time.Sleep(time.Duration(rand.Int64N(int64(DefaultBeat))))
		}
		ms = append(ms, start(t, n, m))
	}
	waitForDetail(t, joinSpread(size, tmpl.tune), "every member sees the whole fleet", func() bool {
		for _, m := range ms {
			if len(m.Members()) != size {
				return false
			}
		}
		return true
	}, func() string { return missingMembers(ms) })
	return ms
}

// joinSpread is how long cluster waits, after the last member started, for every
// member of size to see every other: 30 s (300 ms a member past 100), or as long as
// memberlist may take at timers tune (nil: the WAN profile's) to tell a member of
// a newcomer that gossip did not reach. Each member that learns of a newcomer
// relays its alive message 4·⌈log10(n+1)⌉ times to members picked at random, and
// each later newcomer relays every member it learns of again; a member that none
// of those reached (in about 1 of 200 fake-clock cold starts of 20 members here,
// always one of the last to join: no later newcomer relays it) learns of it only
// at its next push-pull, which memberlist runs a random part of PushPullInterval
// plus one whole interval after the member started, and every interval after
// (60 s at the WAN profile, longer past 32 members): two intervals after the last
// start, and 10 s for the exchange and a loaded machine.
func joinSpread(size int, tune func(*memberlist.Config)) time.Duration {
	c := memberlist.DefaultWANConfig()
	if tune != nil {
		tune(c)
	}
	pushPull := c.PushPullInterval
	if size > 32 { // memberlist's pushPullScale
		pushPull *= time.Duration(math.Ceil(math.Log2(float64(size))-math.Log2(32)) + 1)
	}
	return max(30*time.Second, time.Duration(size)*300*time.Millisecond, 2*pushPull+10*time.Second)
}

// missingMembers says, for each member that does not see all of ms, whom it misses
// and what memberlist tells it of them.
func missingMembers(ms []*Fleet) string {
	var b strings.Builder
	for _, m := range ms {
		seen := m.Members()
		if len(seen) == len(ms) {
			continue
		}
		ml := map[string]string{}
		if l := m.ml.Load(); l != nil {
			for _, n := range l.Members() {
				ml[n.Name] = fmt.Sprintf("listed (state %d)", n.State)
			}
		}
		for _, o := range ms {
			if !slices.Contains(seen, o.Name()) {
				fmt.Fprintf(&b, "\n%s misses %s (memberlist: %s)", m.Name(), o.Name(), cmp.Or(ml[o.Name()], "not listed"))
			}
		}
	}
	return b.String()
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitForDetail(t, d, what, cond, func() string { return "" })
}

// waitForDetail is waitFor whose failure also says what detail returns then.
func waitForDetail(t testing.TB, d time.Duration, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: not true: %s%s", d, what, detail())
		}
		<-tick.C
	}
}

// status is a probe's result as the scheduler tells it once the check's threshold
// window has completed (a verdict).
func status(down bool) health.Status { return health.Status{Seen: true, Down: down, Verdict: true} }

// ms is a send time for hand-made messages: any increasing number will do.
func ms(t time.Time) uint64 { return uint64(t.UnixMilli()) }

// beatOf is a heartbeat with header h and digest.
func beatOf(h header, digest uint64) []byte {
	b := appendUint64(appendUint64(appendHeader(nil, h), digest), uint64(time.Now().UnixMilli()))
	return appendUvarint(b, 0) // no changes carried
}

// views probes fp on every member, as its scheduler would (the probe result is
// local[i]), and reports whether each decides wantDown from total reports.
func views(ms []*Fleet, local []bool, fp string, wantDown bool, total int) bool {
	for i, m := range ms {
		m.Local(fp, status(local[i]))
	}
	for i, m := range ms {
		if m.Status(fp, status(local[i])).Down != wantDown || m.View(fp).Total != total {
			return false
		}
	}
	return true
}

func TestOneMemberDownIsOutvoted(t *testing.T) {
	for _, size := range []int{3, 5} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			ms := cluster(t, nil, size, member{})
			local := make([]bool, size)
			local[0] = true // m00 has a bad path to the endpoint
			for i, m := range ms {
				m.Local("fp-web", status(local[i]))
			}
			waitFor(t, 20*time.Second, "healthy everywhere", func() bool { return views(ms, local, "fp-web", false, size) })
			v := ms[0].View("fp-web")
			if v.Healthy != size-1 || v.Quorum != 18 || len(v.Reports) != size || !v.Reports[0].Self || !v.Reports[0].Down {
				t.Errorf("view on m00: %+v", v)
			}
		})
	}
}

// TestPartitionHealsAfterMemberlistDeclaresDead uses fast memberlist timers (and
// fast heartbeats to match) because at the WAN profile's timers memberlist takes
// 30 s or more (80 s measured on a 3/2 split) to declare the other side dead; this is
// the heal by rejoining.
// TestPartitionDefaults is the partition at the timers users get, and
// TestPartitionHealsAfterDeadDefaults this heal.
func TestPartitionHealsAfterMemberlistDeclaresDead(t *testing.T) {
	n := &netsim{}
	ms := cluster(t, n, 5, member{tune: fast, beat: 100 * time.Millisecond, suspicion: time.Second, maxBackoff: 300 * time.Millisecond})
	// m00-m02 see the endpoint down, m03-m04 up: 2 of 5 healthy (40%) is healthy.
	local := []bool{true, true, true, false, false}
	for i, m := range ms {
		m.Local("fp-api", status(local[i]))
	}
	waitFor(t, 20*time.Second, "healthy everywhere before the partition", func() bool { return views(ms, local, "fp-api", false, 5) })

	n.split(ms[:3], ms[3:])
	waitFor(t, 20*time.Second, "each side judges alone", func() bool {
		return views(ms[:3], local[:3], "fp-api", true, 3) && views(ms[3:], local[3:], "fp-api", false, 2)
	})
	waitFor(t, 20*time.Second, "memberlist drops the other side", func() bool {
		for i, m := range ms {
			if got := len(m.Members()); (i < 3 && got != 3) || (i >= 3 && got != 2) {
				return false
			}
		}
		return true
	})

	n.heal()
	waitFor(t, 30*time.Second, "views converge after healing", func() bool { return views(ms, local, "fp-api", false, 5) })
}

// TestDroppedMemberJoinedAgainByAddress: two members that met through a seed (their
// only join target, stopped since) are split until memberlist drops each from the
// other, then healed: each joins the other again at the address it had, as nothing
// else would bring them back; the seed, which said it was leaving, is not joined again. Tuned timers (fast), so that memberlist itself
// declares the other dead within seconds, and no gossip to the dead, which could
// otherwise reach the other side in the second after it dropped it;
// TestPartitionHealsAfterDeadDefaults takes the same path at the defaults.
func TestDroppedMemberJoinedAgainByAddress(t *testing.T) {
	n := &netsim{}
	tune := func(c *memberlist.Config) {
		fast(c)
		c.GossipToTheDeadTime = 0
	}
	ms := cluster(t, n, 3, member{tune: tune, beat: 100 * time.Millisecond, suspicion: time.Second, maxBackoff: 300 * time.Millisecond})
	seed, a, b := ms[0], ms[1], ms[2]
	seed.Stop()
	waitFor(t, 10*time.Second, "the seed's leave reaches both", func() bool { return len(a.Members()) == 2 && len(b.Members()) == 2 })
	for _, m := range []*Fleet{a, b} { // it said it was leaving: nobody tries it again
		m.mu.Lock()
		_, again := m.lost[seed.Name()]
		m.mu.Unlock()
		if again {
			t.Errorf("%s will join the seed again, which left", m.Name())
		}
	}

	n.split([]*Fleet{a}, []*Fleet{b})
	waitFor(t, 20*time.Second, "memberlist drops the other side", func() bool { return len(a.Members()) == 1 && len(b.Members()) == 1 })
	n.heal()
	waitFor(t, 10*time.Second, "each joins the other again", func() bool { return len(a.Members()) == 2 && len(b.Members()) == 2 })
}

func TestWrongKeyRefused(t *testing.T) {
	ms := cluster(t, nil, 2, member{})
	other := []byte("fedcba9876543210fedcba9876543210")
	bad := start(t, nil, member{name: "intruder", key: other})
	if n, err := bad.ml.Load().Join([]string{ms[0].Addr()}); err == nil || n != 0 {
		t.Fatalf("join with the wrong key: %d joined, err %v", n, err)
	}
	plain := start(t, nil, member{name: "plain"})
	if n, err := plain.ml.Load().Join([]string{ms[0].Addr()}); err == nil || n != 0 {
		t.Fatalf("join without encryption: %d joined, err %v", n, err)
	}
	for _, m := range ms {
		if got := m.Members(); len(got) != 2 {
			t.Errorf("%s sees %v", m.Name(), got)
		}
	}
	if got := bad.Members(); len(got) != 1 {
		t.Errorf("intruder sees %v", got)
	}
}

func TestNewRefusesMissingKey(t *testing.T) {
	if _, err := New(Config{Name: "a"}); !errors.Is(err, errNoKey) {
		t.Errorf("no key: %v, want ErrNoKey", err)
	}
	if _, err := New(Config{Name: "a", Key: []byte("short")}); err == nil {
		t.Error("5-byte key accepted")
	}
	if _, err := New(Config{Name: "a", Insecure: true, Quorum: 100}); err == nil {
		t.Error("quorum 100% accepted")
	}
}

func TestStartAloneThenJoinAndRestart(t *testing.T) {
	// b starts first, pointed at a's address while nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	aAddr := netip.MustParseAddrPort(l.Addr().String())
	l.Close()
	b := start(t, nil, member{name: "b", key: testKey, join: []string{aAddr.String()}})
	b.Local("fp", status(false))
	if got := b.Status("fp", status(false)); got.Down || !got.Seen {
		t.Fatalf("alone: %+v, want healthy from its own report", got)
	}
	a := start(t, nil, member{name: "a", bind: aAddr, key: testKey})
	a.Local("fp", status(true))
	waitFor(t, 20*time.Second, "b joins a once a is up", func() bool {
		return len(a.Members()) == 2 && len(b.Members()) == 2 && a.View("fp").Total == 2 && b.View("fp").Total == 2
	})

	// a restarts on the same address with a new view; b drops the old one.
	a.Stop()
	waitFor(t, 20*time.Second, "b sees a leave", func() bool { return b.View("fp").Total == 1 })
	a2 := start(t, nil, member{name: "a", bind: aAddr, key: testKey, join: []string{b.Addr()}})
	a2.Local("fp", status(false))
	waitFor(t, 20*time.Second, "the restarted a is back with its new report", func() bool {
		v := b.View("fp")
		return v.Total == 2 && v.Healthy == 2
	})
}

func TestQuorumBoundary(t *testing.T) {
	for _, tc := range []struct {
		healthy, total int
		want           bool
	}{
		{9, 50, false}, {10, 50, true}, {0, 1, false}, {1, 1, true}, {1, 5, true}, {1, 6, false}, {0, 0, false},
	} {
		if got := Healthy(tc.healthy, tc.total, DefaultQuorum); got != tc.want {
			t.Errorf("Healthy(%d of %d) = %t, want %t", tc.healthy, tc.total, got, tc.want)
		}
	}
	// The same through the wire and the fleet's bookkeeping: 50 checkers, this one
	// seeing the endpoint down and k of the 49 others seeing it up.
	for _, k := range []int{9, 10} {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			f, err := New(Config{Name: "self", Insecure: true, Quorum: DefaultQuorum})
			if err != nil {
				t.Fatal(err)
			}
			f.Local("fp", status(true))
			for i := range 49 {
				name := fmt.Sprintf("c%02d", i)
				f.alive[name] = memberlist.Node{Name: name}
				feed(f, name, 1, 1, entry{id: shortID("fp"), flags: flagsOf(i >= k), seq: 1})
			}
			v := f.View("fp")
			got := f.Status("fp", status(true))
			if v.Total != 50 || v.Healthy != k || got.Down != (k <= 9) {
				t.Errorf("%d of 50 healthy: view %d/%d, down %t", k, v.Healthy, v.Total, got.Down)
			}
		})
	}
}

// feed hands f a beat and a change from member name, as gossip would.
func feed(f *Fleet, name string, epoch, seq uint64, e entry) {
	now := ms(time.Now())
	h := header{typ: msgDelta, name: name, epoch: epoch, seq: seq, sentAt: now}
	f.handle(appendEntry(appendHeader(nil, h), e), false)
	h.typ = msgBeat
	f.handle(beatOf(h, 0), false)
}

// TestStaleAndRestartedReports, at the timers users get (beat 1 s, suspicion 5 s,
// stale 1 min) on a fake clock: a member silent past the suspicion drops out, a
// restarted member's old reports go, and this member's own report of a check no
// longer probed drops out after the stale bound, the last decision staying.
func TestStaleAndRestartedReports(t *testing.T) {
	now := time.Unix(1000, 0)
	f := clockedFleet(t, Config{Name: "self", Insecure: true, Quorum: DefaultQuorum}, &now)
	f.Local("fp", status(true))
	f.alive["p"] = memberlist.Node{Name: "p"}
	feed(f, "p", 1, 1, entry{id: shortID("fp"), seq: 1})
	if got := f.Status("fp", status(true)); got.Down {
		t.Fatal("1 of 2 healthy must be healthy")
	}
	now = now.Add(2 * time.Second)
	f.Local("fp", status(true))
	now = now.Add(4 * time.Second) // p silent for 6s > the suspicion
	if v := f.View("fp"); v.Total != 1 || !f.Status("fp", status(true)).Down {
		t.Fatalf("a silent member must drop out: %+v", v)
	}
	// An old-epoch report is ignored; a new epoch replaces p's reports.
	feed(f, "p", 2, 1, entry{id: shortID("other"), seq: 1})
	if v := f.View("fp"); v.Total != 1 {
		t.Fatalf("restarted p still counts its old report: %+v", v)
	}
	feed(f, "p", 1, 5, entry{id: shortID("fp"), seq: 5})
	if v := f.View("fp"); v.Total != 1 {
		t.Fatalf("a report from p's old epoch counted: %+v", v)
	}
	// Own reports of a check no longer probed go stale; with nothing counted, the
	// last decision stays.
	now = now.Add(defaultStale)
	f.tick()
	if v := f.View("fp"); v.Total != 0 || !v.Kept {
		t.Fatalf("own report not probed for over the stale bound still counts: %+v", v)
	}
	if got := f.Status("fp", status(false)); !got.Down {
		t.Fatal("with no report counted, the last status must be kept")
	}
}

func TestWire(t *testing.T) {
	f, _ := New(Config{Name: "self", Insecure: true})
	for i := range 100 {
		f.Local(fmt.Sprint(i), status(i%7 == 0))
	}
	b := f.stateMsg()
	r := reader{b: b}
	if h := r.header(); h.typ != msgState || h.name != "self" || h.seq != 100 {
		t.Fatalf("header %+v", h)
	}
	es := r.entries()
	if r.err != nil || len(es) != 100 || len(r.b) != 0 {
		t.Fatalf("%d entries, err %v, %d bytes left", len(es), r.err, len(r.b))
	}
	for n := range b { // every truncation is refused, none panics
		r := reader{b: b[:n]}
		r.header()
		if r.entries(); r.err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
	t.Logf("full state of 100 checks: %d bytes (%.1f per check)", len(b), float64(len(b))/100)
}

func TestStopLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	a, err := New(Config{Name: "a", Key: testKey, Bind: netip.MustParseAddrPort("127.0.0.1:0"),
		Join: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	a.Local("fp", status(false))
	a.Stop()
	waitFor(t, 10*time.Second, "goroutines end after Stop", func() bool { return runtime.NumGoroutine() <= before })
}

func TestFlipRepublishesThatCheck(t *testing.T) {
	var mu sync.Mutex
	got, all := map[string]bool{}, false
	a := start(t, nil, member{name: "a", key: testKey, onChecks: func(fps []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, fp := range fps {
			got[fp] = true
		}
	}, onChange: func() {
		mu.Lock()
		defer mu.Unlock()
		all = true
	}})
	b := start(t, nil, member{name: "b", key: testKey, join: []string{a.Addr()}})
	for _, m := range []*Fleet{a, b} {
		m.Local("fp-1", status(false))
		m.Local("fp-2", status(false))
	}
	waitFor(t, 20*time.Second, "a holds b's reports", func() bool {
		a.Local("fp-1", status(false))
		b.Local("fp-1", status(false))
		return a.View("fp-1").Total == 2 && a.View("fp-2").Total == 2
	})
	mu.Lock()
	all = false // what joining and b's first reports republished is not the flip's doing
	clear(got)
	mu.Unlock()
	b.Local("fp-1", status(true)) // a flip travels as a change message
	// On a loaded machine the change message can be overtaken by b's beats, and a
	// then pulls b's full report set, which republishes every check (OnChange): the
	// decision must move either way, and only the change message's path can say
	// which checks it touched.
	waitFor(t, 20*time.Second, "a republishes fp-1 after b's flip", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return (got["fp-1"] || all) && a.View("fp-1").Healthy == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if !all && got["fp-2"] {
		t.Error("fp-2 did not change but was republished")
	}
}

// clockedFleet is a fleet of cfg, without memberlist, whose clock reads *now: the
// test moves time by moving *now.
func clockedFleet(t *testing.T, cfg Config, now *time.Time) *Fleet {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.now = func() time.Time { return *now }
	return f
}
