package health

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzHTTPResponse feeds arbitrary bytes to the HTTP probe as the endpoint's
// response, with an arbitrary match string. The probe must not panic, must read
// at most its header and body limits, and, for responses small enough that no
// limit applies, must agree with a plain reading of the whole response: a pass
// exactly when the status is 200-399 and, with a match string, the match lies in
// the first MatchWindow bytes of the decoded body. Seeds: testdata/fuzz.
func FuzzHTTPResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK"), "OK")
	body := bodyWithMatch(matchWindow, matchWindow-2)
	for _, enc := range []string{"gzip", "deflate", "rawdeflate"} {
		z := compress(f, enc, body)
		hdr := "gzip"
		if enc != "gzip" {
			hdr = "deflate"
		}
		f.Add(append([]byte("HTTP/1.1 200 OK\r\nContent-Encoding: "+hdr+"\r\n\r\n"), z...), "OK")
	}
	f.Fuzz(func(t *testing.T, data []byte, match string) {
		c := &httpChecker{status: [2]int{DefaultStatusMin, DefaultStatusMax}, match: []byte(match)}
		cr := &countingReader{r: bytes.NewReader(data)}
		err := c.judge(cr, func() error { return nil })
		if cr.n > maxHeaderBytes+maxRawBody {
			t.Fatalf("read %d bytes; want at most %d", cr.n, maxHeaderBytes+maxRawBody)
		}
		if len(data) >= maxHeaderBytes {
			return // a limit may decide: no plain reading to compare with
		}
		want := plainJudge(data, []byte(match))
		if (err == nil) != want {
			t.Fatalf("probe result %v; a plain reading says pass=%v", err, want)
		}
	})
}

// plainJudge decides a probe by reading the whole response with no limits.
func plainJudge(data, match []byte) bool {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), nil)
	if err != nil || resp.StatusCode < DefaultStatusMin || resp.StatusCode > DefaultStatusMax {
		return false
	}
	if len(match) == 0 {
		return true
	}
	r, err := decoded(resp)
	if err != nil {
		return false
	}
	window, _ := io.ReadAll(io.LimitReader(r, matchWindow))
	return bytes.Contains(window, match)
}
