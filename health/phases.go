package health

import (
	"context"
	"crypto/tls"
	"io"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// Phases is how long the parts of one probe took, each measured from the probe's
// start except Connect and TLS, which are the durations of the TCP connect and the
// TLS handshake themselves. A zero phase was not reached or does not apply (a tcp
// probe has no TLS handshake and no first byte).
type Phases struct {
	Connect   time.Duration // the TCP connect (the last one, when a probe dials twice)
	TLS       time.Duration // the TLS handshake
	FirstByte time.Duration // from the probe's start to the response's first byte
	Total     time.Duration // the whole probe
}

// PhaseNames are the phase label values of Phases, in the order Each visits them.
var PhaseNames = [...]string{"connect", "tls", "first_byte", "total"}

// Each calls fn with the name and duration of every phase that was measured.
func (p Phases) Each(fn func(name string, d time.Duration)) {
	for i, d := range [...]time.Duration{p.Connect, p.TLS, p.FirstByte, p.Total} {
		if d > 0 {
			fn(PhaseNames[i], d)
		}
	}
}

// PhaseObserver is an Observer that also wants each probe's phases; the scheduler
// tells it after Probed, from the probe's goroutine.
type PhaseObserver interface {
	Phased(spec *Spec, p Phases)
}

// phaseClock records a probe's phases; the probe's dials and library callbacks may
// run on other goroutines, so every field is atomic (nanoseconds).
type phaseClock struct {
	start                   time.Time
	connect, tls, firstByte atomic.Int64
	tlsStart                atomic.Int64 // since start, for httptrace's start/done pair
}

func (pc *phaseClock) since() int64 { return int64(time.Since(pc.start)) }

// phases returns what was recorded, with total.
func (pc *phaseClock) phases(total time.Duration) Phases {
	return Phases{Connect: time.Duration(pc.connect.Load()), TLS: time.Duration(pc.tls.Load()),
		FirstByte: time.Duration(pc.firstByte.Load()), Total: total}
}

// noteConnect records a connect that took d.
func (tr *trace) noteConnect(d time.Duration) {
	if tr != nil {
		tr.clock.connect.Store(int64(d))
	}
}

// noteTLS records a TLS handshake that took d.
func (tr *trace) noteTLS(d time.Duration) {
	if tr != nil {
		tr.clock.tls.Store(int64(d))
	}
}

// noteFirstByte records that the response's first byte arrived now (the first
// call counts).
func (tr *trace) noteFirstByte() {
	if tr != nil {
		tr.clock.firstByte.CompareAndSwap(0, tr.clock.since())
	}
}

// withPhaseTrace adds an httptrace to ctx that records the TLS handshake and the
// first response byte of HTTP clients (the websocket library's) into tr.
func withPhaseTrace(ctx context.Context, tr *trace) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		TLSHandshakeStart: func() { tr.clock.tlsStart.Store(tr.clock.since()) },
		TLSHandshakeDone: func(tls.ConnectionState, error) {
			tr.noteTLS(time.Duration(tr.clock.since() - tr.clock.tlsStart.Load()))
		},
		GotFirstResponseByte: tr.noteFirstByte,
	})
}

// firstByteReader notes on tr when its first byte is read.
type firstByteReader struct {
	r  io.Reader
	tr *trace
}

func (f *firstByteReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 {
		f.tr.noteFirstByte()
	}
	return n, err
}

// timedHandshake runs tc's TLS client handshake (under the deadline set on its
// connection) and records its duration on tr.
func timedHandshake(tr *trace, tc *tls.Conn) error {
	start := time.Now()
	err := tc.Handshake()
	if err == nil {
		tr.noteTLS(time.Since(start))
	}
	return err
}
