package health

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// TestQuickStatusAgreesWithReadResponse: the heads quickStatus reads are the plain
// ones, each of which http.ReadResponse accepts with the same status; it leaves
// every other to ReadResponse, having consumed nothing, so the probe's result is
// ReadResponse's either way.
func TestQuickStatusAgreesWithReadResponse(t *testing.T) {
	tests := []struct {
		head  string
		quick bool // quickStatus reads it
	}{
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK", true},
		{"HTTP/1.0 503\r\n\r\n", true},
		{"HTTP/1.1 301 Moved\r\nLocation: /x\r\nX-Odd:\tv\xff\r\n\r\n", true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 007\r\n\r\n", true},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nOK\r\n0\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nX-A: b\r\n folded\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\n X-A: b\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nX A: b\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nX-A: b\x01\r\n\r\n", false},
		{"HTTP/1.1 200 OK\nX-A: b\n\n", false},
		{"HTTP/1.1  200 OK\r\n\r\n", false},
		{"HTTP/1.1 2000 OK\r\n\r\n", false},
		{"HTTP/1.1 20x OK\r\n\r\n", false},
		{"HTTP/2.0 200 OK\r\n\r\n", false},
		{"SSH-2.0-OpenSSH\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nX-A: b\r\n", false}, // no end of head yet
	}
	for _, tc := range tests {
		br := bufio.NewReaderSize(bytes.NewReader([]byte(tc.head)), 4096)
		code, ok := quickStatus(br)
		if ok != tc.quick {
			t.Errorf("%q: quickStatus read it %v, want %v", tc.head, ok, tc.quick)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader([]byte(tc.head))), nil)
		if ok && (err != nil || resp.StatusCode != code) {
			t.Errorf("%q: quickStatus read status %d; ReadResponse: %v, %v", tc.head, code, resp, err)
		}
		if !ok && br.Buffered() != len(tc.head) {
			t.Errorf("%q: quickStatus left %d bytes of %d buffered, want all", tc.head, br.Buffered(), len(tc.head))
		}
	}
}
