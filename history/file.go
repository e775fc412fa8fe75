package history

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FileName is the file in the history directory that holds the saved histories.
const FileName = "healthroute-history.bin"

// fileMagic starts the file and names its layout; a file of another layout is not
// read. The layout: the magic, the number of checks, then per check its
// fingerprint, name, status (1 down), changes ever recorded, its samples (16 bytes
// each, oldest first) and its changes (oldest first: time, status, reason,
// members). Counts and lengths are uvarints, times varints, strings a length and
// their bytes.
const fileMagic = "healthroute-history-1\n"

// maxString bounds a string read from the file (fingerprints, names, reasons).
const maxString = 4096

// Save writes every history to dir, replacing the previous file at once (a
// temporary file renamed over it), so a crash mid-write leaves the previous one.
func (s *Store) Save(dir string) error {
	tmp, err := os.CreateTemp(dir, FileName+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	w := bufio.NewWriterSize(tmp, 1<<16)
	s.encode(w)
	err = w.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, FileName))
}

// encode writes the store in the file's layout. It holds the store's lock for one
// check at a time, encoding it into a buffer, and writes outside the lock: probes
// recording their results never wait for the disk. Write errors surface at the
// writer's Flush.
func (s *Store) encode(w *bufio.Writer) {
	s.mu.Lock()
	fps := make([]string, 0, len(s.checks))
	for fp := range s.checks {
		fps = append(fps, fp)
	}
	s.dirty = false
	s.mu.Unlock()
	var b []byte
	b = append(b, fileMagic...)
	b = binary.AppendUvarint(b, uint64(len(fps)))
	for _, fp := range fps {
		s.mu.Lock()
		c := s.checks[fp]
		if c == nil { // dropped since: saved empty
			c = &check{fp: fp}
		}
		b = c.appendTo(b)
		s.mu.Unlock()
		w.Write(b)
		b = b[:0]
	}
}

// appendTo appends c in the file's layout to b.
func (c *check) appendTo(b []byte) []byte {
	uv := func(v uint64) { b = binary.AppendUvarint(b, v) }
	str := func(v string) { uv(uint64(len(v))); b = append(b, v...) }
	str(c.fp)
	str(c.name)
	b = append(b, b2u(c.down))
	uv(c.total)
	uv(uint64(len(c.samples)))
	start := 0
	if len(c.samples) == MaxMinutes {
		start = c.next
	}
	var sb [16]byte
	for i := range c.samples {
		sm := c.samples[(start+i)%len(c.samples)]
		binary.LittleEndian.PutUint32(sb[0:], sm.minute)
		binary.LittleEndian.PutUint16(sb[4:], sm.probes)
		binary.LittleEndian.PutUint16(sb[6:], sm.failures)
		binary.LittleEndian.PutUint32(sb[8:], sm.sum)
		binary.LittleEndian.PutUint16(sb[12:], sm.max)
		sb[14], sb[15] = sm.down, 0
		b = append(b, sb[:]...)
	}
	uv(uint64(len(c.changes)))
	for i := range c.changes {
		ch := c.changes[(c.cnext+i)%len(c.changes)]
		b = binary.AppendVarint(b, ch.at)
		b = append(b, b2u(ch.down))
		str(ch.reason)
		str(ch.members)
	}
	return b
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// Load reads the histories saved in dir into s, for the checks s does not hold
// yet; a directory without the file is no error, a file that is not a history is.
func (s *Store) Load(dir string) error {
	f, err := os.Open(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	checks, err := decode(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range checks {
		if _, ok := s.checks[c.fp]; !ok {
			s.checks[c.fp] = c
		}
	}
	return nil
}

// errCorrupt is returned for a file that does not follow the layout.
var errCorrupt = errors.New("not a healthroute history file, or a damaged one")

// decode reads checks in the file's layout.
func decode(r *bufio.Reader) ([]*check, error) {
	magic := make([]byte, len(fileMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != fileMagic {
		return nil, errCorrupt
	}
	var bad error
	uv := func(limit uint64) uint64 {
		v, err := binary.ReadUvarint(r)
		if err != nil || v > limit {
			bad = errCorrupt
			return 0
		}
		return v
	}
	str := func() string {
		b := make([]byte, uv(maxString))
		if _, err := io.ReadFull(r, b); err != nil {
			bad = errCorrupt
		}
		return string(b)
	}
	byt := func() byte {
		b, err := r.ReadByte()
		if err != nil {
			bad = errCorrupt
		}
		return b
	}
	n := uv(1 << 24)
	var out []*check
	for range n {
		c := &check{fp: str(), name: str(), down: byt() == 1, total: uv(1 << 62)}
		c.samples = make([]sample, uv(MaxMinutes))
		var sb [16]byte
		for i := range c.samples {
			if _, err := io.ReadFull(r, sb[:]); err != nil {
				return nil, errCorrupt
			}
			c.samples[i] = sample{minute: binary.LittleEndian.Uint32(sb[0:]), probes: binary.LittleEndian.Uint16(sb[4:]),
				failures: binary.LittleEndian.Uint16(sb[6:]), sum: binary.LittleEndian.Uint32(sb[8:]),
				max: binary.LittleEndian.Uint16(sb[12:]), down: sb[14]}
		}
		c.changes = make([]change, uv(MaxChanges))
		for i := range c.changes {
			at, err := binary.ReadVarint(r)
			if err != nil {
				return nil, errCorrupt
			}
			c.changes[i] = change{at: at, down: byt() == 1, reason: clip(str(), MaxReason), members: clip(str(), MaxMembers)}
		}
		c.total = max(c.total, uint64(len(c.changes)))
		if bad != nil {
			return nil, bad
		}
		out = append(out, c)
	}
	return out, bad
}

// Dirty reports whether the store changed since it was last saved.
func (s *Store) Dirty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dirty
}
