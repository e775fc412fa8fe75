package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Checker runs one probe. It returns nil when the endpoint passes, ErrNoData when a
// prometheus query had no result, and another error, saying what failed, otherwise.
// A Checker must return once ctx is done.
type Checker interface {
	Check(ctx context.Context) error
}

// CheckFunc adapts a function to Checker.
type CheckFunc func(ctx context.Context) error

// Check calls f.
func (f CheckFunc) Check(ctx context.Context) error { return f(ctx) }

// ErrNoData is returned by a prometheus probe whose query result is empty.
var ErrNoData = errors.New("insufficient data")

// Version is sent in probes' User-Agent header.
const Version = "0.1.0"

// UserAgent is the User-Agent of HTTP and WebSocket probes sent by the checker named
// checker ("" when the instance has no fleet name).
func UserAgent(checker string) string {
	if checker == "" {
		return "healthroute/" + Version
	}
	return fmt.Sprintf("healthroute/%s (checker %s)", Version, checker)
}

// NewChecker returns the Checker that probes spec. agent is the User-Agent to send.
func NewChecker(spec *Spec, agent string) (Checker, error) {
	switch spec.Type {
	case HTTP, HTTPS:
		return newHTTPChecker(spec, agent)
	case TCP:
		return newTCPChecker(spec)
	case WebSocket:
		return newWSChecker(spec, agent)
	case GRPC:
		return newGRPCChecker(spec, agent)
	case Prometheus:
		return newPromChecker(spec, agent)
	}
	return nil, fmt.Errorf("check %s: type %s has no probe", spec.Name, spec.Type)
}

// DefaultTimeout is the probe budget of websocket, grpc and prometheus checks that
// set no timeout; a shorter interval shortens it to the interval, so a canary probed
// every second sees a dead endpoint within a few seconds, not tens.
const DefaultTimeout = 5 * time.Second

// budget returns the longest a probe of spec may take; the scheduler cancels it
// after that.
func budget(spec *Spec) time.Duration {
	if spec.Timeout > 0 {
		return spec.Timeout
	}
	switch spec.Type {
	case HTTP, HTTPS:
		if spec.Match != "" {
			return httpConnect + HTTPResponse + HTTPBody
		}
		return httpConnect + HTTPResponse
	case TCP:
		return TCPConnect
	}
	if spec.Interval > 0 && spec.Interval < DefaultTimeout {
		return spec.Interval
	}
	return DefaultTimeout
}

// localErrnos are the errors with which this process's own side of a connection
// fails: out of file descriptors (the process's or the system's), of socket buffers
// or memory, or of source ports. None says anything of the endpoint.
var localErrnos = [...]syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL}

// isLocal reports whether err is a probe failure of this process's own making (see
// localErrnos) rather than the endpoint's. The scheduler gives such a probe no
// result: the check keeps its state.
func isLocal(err error) bool {
	if err == nil {
		return false
	}
	var le localError
	if errors.As(err, &le) {
		return true
	}
	for _, e := range localErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	// The resolver reports why its own socket failed only as text.
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		for _, e := range localErrnos {
			if strings.Contains(dnsErr.Err, e.Error()) {
				return true
			}
		}
	}
	return false
}

// localError marks a probe error that a local resource error caused, when the
// probe's library reported it only as text (grpc, the Prometheus client).
type localError struct{ err error }

func (e localError) Error() string { return e.err.Error() }
func (e localError) Unwrap() error { return e.err }

// trace collects what a probe's dials saw, across the goroutines a library may
// dial from, and how long its phases took.
type trace struct {
	local atomic.Bool
	clock phaseClock
}

type traceKey struct{}

// withTrace returns ctx carrying tr, starting its clock. The http, https and tcp
// probes record their phases on tr themselves; the others' libraries (websocket's
// and prometheus's HTTP clients) report theirs through an httptrace, added for
// them alone: it is two allocations a probe.
func withTrace(ctx context.Context, tr *trace, typ Type) context.Context {
	tr.clock.start = time.Now()
	ctx = context.WithValue(ctx, traceKey{}, tr)
	switch typ {
	case HTTP, HTTPS, TCP:
		return ctx
	}
	return withPhaseTrace(ctx, tr)
}

// traceFrom returns ctx's trace, nil when it has none (a probe run outside the
// scheduler).
func traceFrom(ctx context.Context) *trace {
	tr, _ := ctx.Value(traceKey{}).(*trace)
	return tr
}

// dial opens the connections of the probes that hand theirs to a library
// (websocket, grpc, prometheus): net's own, through net.Dialer. See dialVia.
func (tr *trace) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return tr.dialVia(ctx, network, addr, libraryDial)
}

// dialProbe opens the connection of an http or tcp probe to pa, connected within
// limit (0: ctx alone bounds it). Such a probe uses its connection only as a
// stream it writes, reads and closes: to an IP address and port, a socket of its
// own (see streamDial), by name through net.Dialer. See dialVia.
func (tr *trace) dialProbe(ctx context.Context, pa *probeAddr, limit time.Duration) (net.Conn, error) {
	if pa.stream == nil {
		if limit > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, limit)
			defer cancel()
		}
		return tr.dialVia(ctx, "tcp", pa.addr, libraryDial)
	}
	var deadline time.Time
	if limit > 0 {
		deadline = time.Now().Add(limit)
	}
	return tr.dialVia(ctx, "tcp", pa.addr, func(ctx context.Context, _, _ string) (net.Conn, error) {
		return streamDial(ctx, pa.stream, deadline)
	})
}

// probeAddr is where an http or tcp probe connects: host:port, and for an IP
// address and port what streamDial needs, prepared once for every probe.
type probeAddr struct {
	addr   string
	stream *streamTarget // nil: dialled by name with net.Dialer
}

func newProbeAddr(addr string) *probeAddr {
	pa := &probeAddr{addr: addr}
	if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Addr().Zone() == "" && !ap.Addr().Is4In6() {
		pa.stream = newStreamTarget(ap)
	}
	return pa
}

// dialVia opens a probe's connection with dial. Out of file descriptors, it gives
// one of the reserve's back and tries once more. It notes on tr (which may be nil)
// a failure of this process's own, so the scheduler can tell it from the
// endpoint's.
func (tr *trace) dialVia(ctx context.Context, network, addr string, dial func(context.Context, string, string) (net.Conn, error)) (net.Conn, error) {
	start := time.Now()
	c, err := dial(ctx, network, addr)
	out := outOfFDs(err)
	if out && fdReserve.take() {
		start = time.Now()
		c, err = dial(ctx, network, addr)
		out = outOfFDs(err)
	}
	if err == nil {
		tr.noteConnect(time.Since(start))
	}
	if err != nil && tr != nil && (out || isLocal(err)) {
		tr.local.Store(true)
	}
	return c, err
}

// libraryDial dials with net.Dialer, without TCP keep-alive: a probe's connection
// ends long before the first keep-alive would be sent, and enabling it costs four
// system calls a connection.
func libraryDial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{KeepAlive: -1}
	return d.DialContext(ctx, network, addr)
}

// outOfFDs reports whether a dial failed for want of a file descriptor. The
// resolver, out of descriptors, says only that the name was not found: a failed
// lookup counts when this process cannot open a descriptor right after.
func outOfFDs(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return true
	}
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) {
		return false
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
	}
	f.Close()
	return false
}

// reserveFDs is how many file descriptors the process keeps open on the null
// device for probes: a probe that finds none free closes one and takes its place,
// so a flood of connections that exhausts the process's descriptors does not stop
// probing outright. The scheduler refills the reserve after each probe.
const reserveFDs = 8

var fdReserve reserve

// reserve holds descriptors open for probes to take when the process has none.
type reserve struct {
	mu    sync.Mutex
	files []*os.File
}

// take closes one reserved descriptor, freeing its number for the caller's next
// socket; it reports false when the reserve is empty.
func (r *reserve) take() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.files) == 0 {
		return false
	}
	f := r.files[len(r.files)-1]
	r.files = r.files[:len(r.files)-1]
	f.Close()
	return true
}

// fill opens descriptors until the reserve holds ReserveFDs or the process has
// no more.
func (r *reserve) fill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.files) < reserveFDs {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return
		}
		r.files = append(r.files, f)
	}
}

// drain closes every reserved descriptor: the last scheduler stopped, no probe
// will take one.
func (r *reserve) drain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.files {
		f.Close()
	}
	r.files = nil
}

// size reports how many descriptors the reserve holds.
func (r *reserve) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.files)
}

// probeCtx is the context of a probe whose checker bounds every wait itself by the
// context's deadline (see boundsOwnWaits): the check's context, which releasing the
// check cancels, with the probe's budget as its deadline and the probe's trace as
// a value, in one allocation. Unlike context.WithTimeout's it starts no timer, so
// its Done does not close at the deadline (Err does report it): at 10,000 probes a
// second the timer, its context and their allocations were 7% of the prober's CPU,
// for a deadline the connection's own deadlines already enforce.
type probeCtx struct {
	context.Context // the check's
	deadline        time.Time
	tr              trace
}

func (c *probeCtx) Deadline() (time.Time, bool) {
	if dl, ok := c.Context.Deadline(); ok && dl.Before(c.deadline) {
		return dl, true
	}
	return c.deadline, true
}

func (c *probeCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if dl, _ := c.Deadline(); !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *probeCtx) Value(key any) any {
	if key == (traceKey{}) {
		return &c.tr
	}
	return c.Context.Value(key)
}

// boundsOwnWaits reports whether c is a checker that waits for nothing but its
// connection, each wait under a deadline no later than its context's (streamDial,
// setDeadline, net.Dialer by name): the http, https and tcp probes, which a
// probeCtx serves. Any other checker, such as a test's or a library's, gets a
// context whose Done closes at the deadline.
func boundsOwnWaits(c Checker) bool {
	switch c.(type) {
	case *httpChecker, tcpChecker:
		return true
	}
	return false
}
