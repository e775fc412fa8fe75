package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
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

// Budget returns the longest a probe of spec may take; the scheduler cancels it
// after that.
func Budget(spec *Spec) time.Duration { return budget(spec) }

func budget(spec *Spec) time.Duration {
	if spec.Timeout > 0 {
		return spec.Timeout
	}
	switch spec.Type {
	case HTTP, HTTPS:
		if spec.Match != "" {
			return HTTPConnect + HTTPResponse + HTTPBody
		}
		return HTTPConnect + HTTPResponse
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

// IsLocal reports whether err is a probe failure of this process's own making (see
// localErrnos) rather than the endpoint's. The scheduler gives such a probe no
// result: the check keeps its state.
func IsLocal(err error) bool {
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
// dial from.
type trace struct{ local atomic.Bool }

type traceKey struct{}

func withTrace(ctx context.Context, tr *trace) context.Context {
	return context.WithValue(ctx, traceKey{}, tr)
}

// traceFrom returns ctx's trace, nil when it has none (a probe run outside the
// scheduler).
func traceFrom(ctx context.Context) *trace {
	tr, _ := ctx.Value(traceKey{}).(*trace)
	return tr
}

// dialer opens every probe's connection: it notes on tr (which may be nil) a
// failure of this process's own, so the scheduler can tell it from the endpoint's.
func (tr *trace) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil && tr != nil && IsLocal(err) {
		tr.local.Store(true)
	}
	return c, err
}
