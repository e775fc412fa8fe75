package client

import (
	"math/rand/v2"
	"time"
)

// Backoff is exponential backoff with full jitter (the "Full Jitter" of the AWS
// Architecture Blog's "Exponential Backoff And Jitter"): the wait before reconnect
// attempt n (0-based) is uniform in [0, min(Cap, Base·2ⁿ)). Full jitter spreads a
// crowd of clients that lost the same server at the same instant over the whole
// window, instead of moving the crowd together to the next step.
type Backoff struct {
	Base     time.Duration       // first window; default 500ms
	Cap      time.Duration       // largest window; default 30s
	Attempts int                 // consecutive failed attempts before giving up; default 10
	Rand     func(n int64) int64 // uniform in [0, n); default math/rand/v2.Int64N
}

// Defaults for a zero Backoff.
const (
	DefaultBase     = 500 * time.Millisecond
	DefaultCap      = 30 * time.Second
	DefaultAttempts = 10
)

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBase
	}
	if b.Cap <= 0 {
		b.Cap = DefaultCap
	}
	if b.Cap < b.Base {
		b.Cap = b.Base
	}
	if b.Attempts <= 0 {
		b.Attempts = DefaultAttempts
	}
	if b.Rand == nil {
		b.Rand = rand.Int64N
	}
	return b
}

// Window returns the upper bound of the wait before attempt n (0-based):
// min(Cap, Base·2ⁿ), computed without overflow.
func (b Backoff) Window(n int) time.Duration {
	b = b.withDefaults()
	w := b.Base
	for range min(max(n, 0), 62) {
		if w >= b.Cap/2 {
			return b.Cap
		}
		w *= 2
	}
	return min(w, b.Cap)
}

// Delay returns the wait before attempt n (0-based): uniform in [0, Window(n)).
func (b Backoff) Delay(n int) time.Duration {
	b = b.withDefaults()
	return time.Duration(b.Rand(int64(b.Window(n))))
}
