package health

import (
	"bufio"
	"bytes"
	"io"
)

// quickStatus reads the status code of a response whose head is plain: the whole
// head (to the empty line) in br's buffer, every line ended by CRLF, the status
// line "HTTP/1.1 " or "HTTP/1.0 ", three digits and a space or the line's end,
// each header a token, a colon and a value of the bytes a header value may hold,
// no folded line, no Transfer-Encoding and at most one Content-Length of digits
// alone. http.ReadResponse accepts every such head and reads the same status from
// it; quickStatus reports false, having consumed nothing, for any other (and on a
// read error, which a stickyReader under br gives ReadResponse again), so the
// probe's result is the same as ReadResponse's on every response
// (FuzzHTTPResponse and TestQuickStatusAgreesWithReadResponse compare them).
// The common response costs no allocation and no map of headers.
func quickStatus(br *bufio.Reader) (code int, ok bool) {
	for n := 1; n <= br.Size(); n = br.Buffered() + 1 {
		if _, err := br.Peek(n); err != nil {
			return 0, false
		}
		b, _ := br.Peek(br.Buffered())
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			code, ok = plainHead(b[:i+2])
			if ok {
				br.Discard(i + 4)
			}
			return code, ok
		}
	}
	return 0, false
}

// plainHead parses head, the status line and header lines each ended by CRLF,
// and returns the status code when the head is plain (see quickStatus).
func plainHead(head []byte) (code int, ok bool) {
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	if len(line) < 12 || !(bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || bytes.HasPrefix(line, []byte("HTTP/1.0 "))) {
		return 0, false
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	if len(line) > 12 && line[12] != ' ' || bytes.IndexByte(line, '\r') >= 0 || bytes.IndexByte(line, '\n') >= 0 {
		return 0, false
	}
	lengths := 0
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 {
			return 0, false
		}
		for _, c := range name {
			if !tokenByte(c) {
				return 0, false
			}
		}
		for _, c := range value {
			if c < ' ' && c != '\t' || c == 0x7f {
				return 0, false
			}
		}
		switch {
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, false
		case bytes.EqualFold(name, []byte("Content-Length")):
			v := bytes.TrimLeft(value, " ")
			if lengths++; lengths > 1 || len(v) == 0 || len(v) > 18 {
				return 0, false
			}
			for _, c := range v {
				if c < '0' || c > '9' {
					return 0, false
				}
			}
		}
	}
	return code, true
}

// tokenByte reports whether c may be in a header name (RFC 9110's tchar).
func tokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c != 0 && bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0
}

// stickyReader returns the first error of r to every read after it, as a
// connection that failed goes on failing, so that http.ReadResponse, reading after
// quickStatus gave up on a read error, sees the bytes and the error the probe saw.
type stickyReader struct {
	r   io.Reader
	err error
}

func (s *stickyReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.err = err
	return n, err
}
