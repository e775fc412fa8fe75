package health

import "context"

// ctxErr is how a dial that ctx ended reports it, in net.Dialer's words: "i/o
// timeout" for a deadline, "operation was canceled" for a cancel; errors.Is finds
// the context's error in either.
func ctxErr(err error) error {
	if err == context.DeadlineExceeded {
		return dialTimeout{}
	}
	return dialCanceled{}
}

type dialTimeout struct{}

func (dialTimeout) Error() string        { return "i/o timeout" }
func (dialTimeout) Timeout() bool        { return true }
func (dialTimeout) Temporary() bool      { return true }
func (dialTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

type dialCanceled struct{}

func (dialCanceled) Error() string        { return "operation was canceled" }
func (dialCanceled) Is(target error) bool { return target == context.Canceled }
