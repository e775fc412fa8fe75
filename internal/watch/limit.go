package watch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultLimit is the size limit of a watched or loaded file (a route53 export, a
// latency_table) unless the Corefile's max_file_size sets another: 64 MiB, room
// for an export of about 300,000 record sets.
const DefaultLimit = 64 << 20

// TooLargeError says that a file is over its size limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over the size limit of %d bytes", e.Path, e.Limit)
}

// Reader reads at most a limit from a file: past it, reads fail with a
// TooLargeError instead of returning more.
type Reader struct {
	r     io.Reader
	path  string
	limit int64
	n     int64 // bytes read
}

// NewReader returns a Reader of r, named path in its errors.
func NewReader(r io.Reader, path string, limit int64) *Reader {
	return &Reader{r: r, path: path, limit: limit}
}

func (l *Reader) Read(p []byte) (int, error) {
	if l.n > l.limit {
		return 0, &TooLargeError{l.path, l.limit}
	}
	if room := l.limit + 1 - l.n; int64(len(p)) > room {
		p = p[:room] // one byte past the limit tells a file over it from one at it
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.limit {
		return 0, &TooLargeError{l.path, l.limit}
	}
	return n, err
}

// N returns how many bytes were read.
func (l *Reader) N() int64 { return l.n }

// File is a file opened to read at most a limit.
type File struct {
	*Reader
	f *os.File
}

// Open opens path to read at most limit bytes. A regular file already larger is
// refused before a byte is read; a file that grows past the limit, or one that is
// not a regular file (a pipe, a device), fails when a read passes it.
func Open(path string, limit int64) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Mode().IsRegular() && fi.Size() > limit {
		f.Close()
		return nil, &TooLargeError{path, limit}
	}
	return &File{Reader: NewReader(f, path, limit), f: f}, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// IsTooLarge reports whether err says a file is over its size limit.
func IsTooLarge(err error) bool {
	var e *TooLargeError
	return errors.As(err, &e)
}

// releaseAfter is how many bytes a load reads before Release returns the memory it
// used to the system at once.
const releaseAfter = 8 << 20

// Release returns the memory a failed load that read n bytes left behind to the
// system (a garbage collection and a scavenge) when n is large, so that a big file
// refused does not keep the process's resident memory up for minutes. A load that
// succeeded is left to the runtime's own pace: forcing a collection and a scavenge
// of hundreds of MiB while DNS is served would stall it.
func Release(n int64) {
	if n >= releaseAfter {
		debug.FreeOSMemory()
	}
}

// ParseSize reads a size limit as the Corefile's max_file_size and the import
// command's -max-file-size give it: bytes, or KiB, MiB or GiB with the suffix K, M
// or G; from 1 KiB to 4 GiB.
func ParseSize(v string) (int64, bool) {
	unit := int64(1)
	switch {
	case strings.HasSuffix(v, "K"):
		unit, v = 1<<10, strings.TrimSuffix(v, "K")
	case strings.HasSuffix(v, "M"):
		unit, v = 1<<20, strings.TrimSuffix(v, "M")
	case strings.HasSuffix(v, "G"):
		unit, v = 1<<30, strings.TrimSuffix(v, "G")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > (4<<30)/unit {
		return 0, false
	}
	n *= unit
	return n, n >= 1<<10
}
