package health

import (
	"context"
	"errors"
	"fmt"
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
