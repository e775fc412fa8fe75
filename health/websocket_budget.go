package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
)

const (
	// maxWSBytes bounds the bytes one probe reads from a websocket endpoint after
	// the opening handshake: every frame's header and payload, the closing
	// handshake's included.
	maxWSBytes = 4 * maxWSMessage
	// maxWSFrames bounds the frames one probe reads after the opening handshake:
	// data, continuation, ping, pong and close frames alike.
	maxWSFrames = 4 * maxWSMessages
)

// errWSBudget says that an endpoint sent more than one probe reads.
var errWSBudget = fmt.Errorf("endpoint sent more than a probe reads (%d bytes or %d frames)", maxWSBytes, maxWSFrames)

// wsBudget sits between the websocket library and the upgraded connection. It
// reads the frames the endpoint sends as they pass (their headers, not their
// payloads), counts bytes and frames, and cuts the connection once either passes
// its bound: whatever the library does with them (message reads, pings it answers,
// data it discards while waiting for the closing handshake), a probe reads at most
// maxWSBytes and maxWSFrames. It also notes whether the endpoint's close frame
// arrived, which is the only proof that the closing handshake completed.
type wsBudget struct {
	rwc io.ReadWriteCloser

	mu        sync.Mutex
	read      int64    // bytes read so far
	frames    int      // frame headers read so far
	hdr       [14]byte // the header being read
	hn, need  int      // header bytes read, header length (0 until known)
	op        byte     // opcode of the frame whose payload is passing
	left      uint64   // payload bytes of that frame still to pass
	closeSeen bool     // a whole close frame has passed
	over      bool     // a bound was passed: the connection is cut
}

func newWSBudget(rwc io.ReadWriteCloser) *wsBudget { return &wsBudget{rwc: rwc} }

// Read reads at most what remains of the byte budget, so the bound holds to the byte.
func (b *wsBudget) Read(p []byte) (int, error) {
	b.mu.Lock()
	over, room := b.over, maxWSBytes-b.read
	b.mu.Unlock()
	if over {
		return 0, errWSBudget
	}
	if room <= 0 {
		return 0, b.cut()
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.rwc.Read(p)
	b.mu.Lock()
	b.read += int64(n)
	b.scan(p[:n])
	over = b.frames > maxWSFrames
	b.mu.Unlock()
	if over {
		return 0, b.cut()
	}
	return n, err
}

// cut marks the budget spent and closes the connection, so the library's writes
// (pongs, its close frame) end too.
func (b *wsBudget) cut() error {
	b.mu.Lock()
	b.over = true
	b.mu.Unlock()
	b.rwc.Close()
	return errWSBudget
}

// scan follows the frame boundaries through buf (RFC 6455 section 5.2).
func (b *wsBudget) scan(buf []byte) {
	for len(buf) > 0 {
		if b.left > 0 {
			k := uint64(len(buf))
			if k > b.left {
				k = b.left
			}
			b.left -= k
			buf = buf[k:]
			if b.left == 0 {
				b.endFrame()
			}
			continue
		}
		b.hdr[b.hn] = buf[0]
		b.hn++
		buf = buf[1:]
		if b.hn == 2 {
			b.need = 2
			switch b.hdr[1] & 0x7f {
			case 126:
				b.need += 2
			case 127:
				b.need += 8
			}
			if b.hdr[1]&0x80 != 0 {
				b.need += 4 // a mask key (servers must not mask; the library decides)
			}
		}
		if b.hn < 2 || b.hn < b.need {
			continue
		}
		b.frames++
		b.op = b.hdr[0] & 0x0f
		switch n := b.hdr[1] & 0x7f; n {
		case 126:
			b.left = uint64(b.hdr[2])<<8 | uint64(b.hdr[3])
		case 127:
			for _, c := range b.hdr[2:10] {
				b.left = b.left<<8 | uint64(c)
			}
		default:
			b.left = uint64(n)
		}
		b.hn, b.need = 0, 0
		if b.left == 0 {
			b.endFrame()
		}
	}
}

func (b *wsBudget) endFrame() {
	if b.op == 0x8 {
		b.closeSeen = true
	}
}

// spent reports whether the endpoint passed a bound.
func (b *wsBudget) spent() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

// closed reports whether the endpoint's close frame arrived whole.
func (b *wsBudget) closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closeSeen
}

func (b *wsBudget) Write(p []byte) (int, error) { return b.rwc.Write(p) }
func (b *wsBudget) Close() error                { return b.rwc.Close() }

// wsProbe is what one probe's dial hands back through the request's context: the
// socket, so the probe can close it when its time is up, and the budget.
type wsProbe struct {
	mu     sync.Mutex
	raw    net.Conn
	budget *wsBudget
}

func (p *wsProbe) setRaw(c net.Conn) {
	p.mu.Lock()
	p.raw = c
	p.mu.Unlock()
}

func (p *wsProbe) setBudget(b *wsBudget) {
	p.mu.Lock()
	p.budget = b
	p.mu.Unlock()
}

// closeRaw closes the probe's socket, if it was dialled.
func (p *wsProbe) closeRaw() {
	p.mu.Lock()
	c := p.raw
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// spent reports whether the endpoint passed the probe's budget.
func (p *wsProbe) spent() bool {
	p.mu.Lock()
	b := p.budget
	p.mu.Unlock()
	return b != nil && b.spent()
}

// closedByPeer reports whether the endpoint's close frame arrived.
func (p *wsProbe) closedByPeer() bool {
	p.mu.Lock()
	b := p.budget
	p.mu.Unlock()
	return b != nil && b.closed()
}

type wsProbeKey struct{}

func probeFrom(ctx context.Context) *wsProbe {
	p, _ := ctx.Value(wsProbeKey{}).(*wsProbe)
	return p
}

// budgetTransport puts a wsBudget between the library and every upgraded
// connection it gets.
type budgetTransport struct{ base http.RoundTripper }

func (t budgetTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		return resp, err
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, errors.New("upgraded connection is not readable and writable")
	}
	b := newWSBudget(rwc)
	if p := probeFrom(req.Context()); p != nil {
		p.setBudget(b)
	}
	resp.Body = b
	return resp, nil
}
