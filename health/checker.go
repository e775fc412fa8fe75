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
	}
	return nil, fmt.Errorf("check %s: type %s has no probe", spec.Name, spec.Type)
}

// budget is the longest a probe of spec may take; the scheduler cancels it after that.
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
	return 10 * time.Second
}
