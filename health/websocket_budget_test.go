package health

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// A hostile endpoint costs one probe's budget: a 100 MB frame followed by a close
// frame, or a flood of pings, fails the probe (with or without a heartbeat to
// send) once the probe has read maxWSBytes or maxWSFrames, long before its time
// is up and long before the endpoint is done sending.
func TestWebSocketHostileTargetsFailWithinReadBudget(t *testing.T) {
	const overBudget = "more than a probe reads"
	for _, tc := range []struct {
		name string
		how  coretest.Hostile
		send string
		want string
	}{
		{"100 MB frame then close, closing handshake only", coretest.BigFrameThenClose, "", overBudget},
		// Waiting for a reply, the frame is a message over maxWSMessage.
		{"100 MB frame then close, heartbeat", coretest.BigFrameThenClose, "ping", "message too big"},
		{"ping flood, closing handshake only", coretest.PingFlood, "", overBudget},
		{"ping flood, heartbeat", coretest.PingFlood, "ping", overBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := coretest.HostileWS(t, tc.how)
			// At the defaults users get: 30 s interval, 5 s timeout.
			spec := &Spec{Name: "t", Type: WebSocket, Target: "ws://" + srv.Addr + "/", Send: tc.send}
			err, took := probeOnce(t, spec)
			wantResult(t, err, tc.want)
			if took >= time.Second {
				t.Errorf("probe took %s; want it cut by its read budget, long before its 5s timeout", took)
			}
		})
	}
}

// The probe with neither send nor expect passes only when the endpoint completes
// the closing handshake: one that drops the connection instead of answering the
// probe's close frame fails.
func TestWebSocketCloseWithoutCloseFrameFails(t *testing.T) {
	addr := rawServer(t, func(c net.Conn, done <-chan struct{}) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(h[:])+"\r\n\r\n")
		var frame [8]byte // the client's close frame: 2 header bytes, 4 mask bytes, status 1000
		io.ReadFull(br, frame[:])
	})
	err, _ := probeOnce(t, &Spec{Name: "t", Type: WebSocket, Target: "ws://" + addr + "/", Interval: time.Second})
	wantResult(t, err, "closing handshake")
}

// wsBudget follows frame boundaries however the bytes are split between reads:
// it counts each frame once and sees a close frame only when it has passed whole.
func TestWSBudgetCountsFramesAcrossReads(t *testing.T) {
	stream := []byte{
		0x81, 3, 'a', 'b', 'c', // text, 3 bytes
		0x89, 0, // ping
		0x82, 126, 0x01, 0x00, // binary, 256 bytes (16-bit length)
	}
	stream = append(stream, make([]byte, 256)...)
	stream = append(stream, 0x88, 2, 0x03, 0xe8) // close, status 1000
	for _, step := range []int{1, 2, 3, 7, len(stream)} {
		var b wsBudget
		for i := 0; i < len(stream); i += step {
			if b.closeSeen {
				t.Fatalf("step %d: close seen at byte %d, before the close frame ended", step, i)
			}
			b.scan(stream[i:min(i+step, len(stream))])
		}
		if b.frames != 4 || !b.closeSeen || b.left != 0 || b.hn != 0 {
			t.Errorf("step %d: frames %d, close seen %t, left %d, header bytes %d; want 4, true, 0, 0",
				step, b.frames, b.closeSeen, b.left, b.hn)
		}
	}
}
