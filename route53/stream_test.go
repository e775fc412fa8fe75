package route53

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/healthroute/healthroute/internal/watch"
)

// countingReader serves n bytes of pattern, repeated, and counts what was read.
type countingReader struct {
	pattern string
	left    int64
	read    int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), c.left))
	for i := range p[:n] {
		p[i] = c.pattern[(c.read+int64(i))%int64(len(c.pattern))]
	}
	c.left -= int64(n)
	c.read += int64(n)
	return n, nil
}

// A document that cannot be what it should be is refused at the first token that
// shows it: of 100 MB of junk (a log, binary zeros, JSON of another shape), each
// reader reads no more than its first buffers.
func TestReadRefusesJunkEarly(t *testing.T) {
	const size = 100 << 20
	readers := map[string]func(io.Reader) error{
		"record sets":   func(r io.Reader) error { _, err := ReadRecordSets(r); return err },
		"health checks": func(r io.Reader) error { _, err := ReadHealthChecks(r); return err },
		"cidr blocks":   func(r io.Reader) error { _, err := ReadCIDRBlocks(r); return err },
	}
	junk := []struct{ name, pattern, want string }{
		{"log lines", "2026-12-01T18:40:01Z INFO request served in 3ms\n", "expected a JSON object or array, found a number"},
		{"a log's words", "INFO request served in 3ms\n", "malformed JSON at byte 1"},
		{"binary zeros", "\x00", "malformed JSON at byte 1"},
		{"a string", `"` + strings.Repeat("x", 1000), "expected a JSON object or array, found"},
		{"arrays of numbers", "[[1,2,3,4,5,6,7,8,9,10],", ""},
	}
	for name, read := range readers {
		for _, j := range junk {
			t.Run(name+", "+j.name, func(t *testing.T) {
				r := &countingReader{pattern: j.pattern, left: size}
				err := read(r)
				if err == nil {
					t.Fatal("read 100 MB of junk without an error")
				}
				if j.want != "" && !strings.Contains(err.Error(), j.want) {
					t.Errorf("error %q; want it to contain %q", err, j.want)
				}
				if r.read > 64<<10 {
					t.Errorf("read %d bytes before refusing; want at most 64 KiB", r.read)
				}
			})
		}
	}
}

// Members the reader does not use are skipped token by token, wherever they are.
func TestReadSkipsUnknownMembers(t *testing.T) {
	doc := `{"MaxItems": "100", "Extra": {"a": [1, {"b": null}], "c": "d"}, "ResourceRecordSets": [
		{"Name": "x.example.com.", "Type": "A", "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.1"}]}], "IsTruncated": false}`
	sets, err := ReadRecordSets(strings.NewReader(doc))
	if err != nil || len(sets) != 1 || sets[0].Name != "x.example.com." {
		t.Fatalf("got %+v, %v; want the one record set", sets, err)
	}
	if _, err := ReadRecordSets(strings.NewReader(`{"ResourceRecordSets": {"Name": "x"}}`)); err == nil ||
		!strings.Contains(err.Error(), "ResourceRecordSets: expected an array, found '{'") {
		t.Errorf("record sets as an object: %v; want the shape named", err)
	}
}

// A file over the limit is refused before a byte is read, naming the file and the
// limit; one at the limit is read.
func TestFilesLoadRefusesFileOverLimit(t *testing.T) {
	dir := t.TempDir()
	doc := `{"ResourceRecordSets": [{"Name": "x.example.com.", "Type": "A", "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.1"}]}]}`
	path := filepath.Join(dir, "records.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f := Files{Records: path, Limit: int64(len(doc)) - 1}
	_, err := f.Load()
	if !watch.IsTooLarge(err) || !strings.Contains(err.Error(), path) || f.Read != 0 {
		t.Errorf("a file 1 byte over the limit: %v, %d bytes read; want a size-limit error naming it, nothing read", err, f.Read)
	}
	f.Limit = int64(len(doc))
	if in, err := f.Load(); err != nil || len(in.RecordSets) != 1 || f.Read != int64(len(doc)) {
		t.Errorf("a file at the limit: %d sets, %v, %d bytes read; want 1 set, read whole", len(in.RecordSets), err, f.Read)
	}
}
