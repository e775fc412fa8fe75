package control

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// termFileName is raft's stable store (current term, last vote) beside the log.
// It is a file of fixed size written in place, so that a full disk cannot fail a
// term's write: raft panics when it cannot persist a new term ("failed to save
// current term"), and a write into blocks the file already holds needs no new
// one. The log itself may then refuse entries, which raft survives (a leader
// steps down, a follower refuses the append and is sent it again); the member
// keeps answering DNS from the state it has, and catches up once the disk has
// room. The file belongs to raft.db: a start without raft.db starts it afresh.
const termFileName = "raft.term"

// The file is two slots; sequence number s is written to slot s%2, over the
// older one, so a write torn by a crash leaves the newer, whole. A slot: "HRT1", a
// sequence number (8 bytes), the payload's length (2), the payload (each key: a
// 1-byte length and its bytes, each value: a 2-byte length and its bytes), zero
// padding, and the CRC-32C of the slot's first termSlot-4 bytes.
const (
	termSlot    = 512
	termMagic   = "HRT1"
	termPayload = termSlot - 4 - 8 - 2 - 4
)

// termFile is the stable store written in place. Its methods are safe for
// concurrent use.
type termFile struct {
	mu  sync.Mutex
	f   *os.File
	seq uint64
	kv  map[string][]byte
}

// openTermFile opens the stable store at path. fresh starts it empty (the log it
// belongs to is new); a missing file is created, holding migrate's keys (the
// stable store of the log, where earlier versions kept them). A file that is
// not two slots, or whose slots are both damaged, is refused.
func openTermFile(path string, fresh bool, migrate func() (map[string][]byte, error)) (*termFile, error) {
	t := &termFile{kv: map[string][]byte{}}
	_, err := os.Stat(path)
	switch {
	case err == nil && !fresh:
		return t, t.load(path)
	case err != nil && !os.IsNotExist(err):
		return nil, err
	}
	if !fresh && migrate != nil {
		kv, err := migrate()
		if err != nil {
			return nil, err
		}
		t.kv = kv
	}
	return t, t.create(path)
}

// create writes both slots, whole, to a new file, so that its blocks are
// allocated while the disk has room; then every later write is in place.
func (t *termFile) create(path string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 2*termSlot) // the first slot zero: not whole
	t.seq = 1
	if err := encodeTermSlot(buf[termSlot:], t.seq, t.kv); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(buf); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("creating %s: %v", path, err)
	}
	t.f = f
	return nil
}

// load reads the newest whole slot of the file at path.
func (t *termFile) load(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 2*termSlot+1)
	n, err := io.ReadFull(f, buf)
	if err != io.ErrUnexpectedEOF || n != 2*termSlot {
		f.Close()
		return fmt.Errorf("%s is damaged: %d bytes, expected %d", path, n, 2*termSlot)
	}
	found := false
	for i := range 2 {
		seq, kv, err := decodeTermSlot(buf[i*termSlot : (i+1)*termSlot])
		if err == nil && (!found || seq > t.seq) {
			t.seq, t.kv, found = seq, kv, true
		}
	}
	if !found {
		f.Close()
		return fmt.Errorf("%s is damaged: neither of its two copies is whole", path)
	}
	t.f = f
	return nil
}

// set writes kv with k set to v into the older slot, synced.
func (t *termFile) set(k string, v []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	kv := maps.Clone(t.kv)
	kv[k] = slices.Clone(v)
	buf := make([]byte, termSlot)
	if err := encodeTermSlot(buf, t.seq+1, kv); err != nil {
		return err
	}
	if _, err := t.f.WriteAt(buf, int64((t.seq+1)%2)*termSlot); err != nil {
		return err
	}
	if err := unix.Fdatasync(int(t.f.Fd())); err != nil {
		return err
	}
	t.seq, t.kv = t.seq+1, kv
	return nil
}

// get returns a copy of k's value, errNotFound when it has none.
func (t *termFile) get(k string) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.kv[k]
	if !ok {
		return nil, errNotFound
	}
	return slices.Clone(v), nil
}

func (t *termFile) close() error { return t.f.Close() }

// encodeTermSlot writes the slot for seq and kv into buf (termSlot bytes).
func encodeTermSlot(buf []byte, seq uint64, kv map[string][]byte) error {
	clear(buf)
	p := make([]byte, 0, termPayload)
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		v := kv[k]
		if len(k) > 255 || len(p)+1+len(k)+2+len(v) > termPayload {
			return fmt.Errorf("the stable store holds %d bytes at most (key %q)", termPayload, k)
		}
		p = append(p, byte(len(k)))
		p = append(p, k...)
		p = binary.BigEndian.AppendUint16(p, uint16(len(v)))
		p = append(p, v...)
	}
	copy(buf, termMagic)
	binary.BigEndian.PutUint64(buf[4:], seq)
	binary.BigEndian.PutUint16(buf[12:], uint16(len(p)))
	copy(buf[14:], p)
	binary.BigEndian.PutUint32(buf[termSlot-4:], crc32.Checksum(buf[:termSlot-4], crcTable))
	return nil
}

// decodeTermSlot reads one slot; an error when it is not whole.
func decodeTermSlot(b []byte) (uint64, map[string][]byte, error) {
	if !bytes.Equal(b[:4], []byte(termMagic)) || crc32.Checksum(b[:termSlot-4], crcTable) != binary.BigEndian.Uint32(b[termSlot-4:]) {
		return 0, nil, errors.New("not whole")
	}
	seq, n := binary.BigEndian.Uint64(b[4:]), int(binary.BigEndian.Uint16(b[12:]))
	if n > termPayload {
		return 0, nil, errors.New("payload too long")
	}
	p, kv := b[14:14+n], map[string][]byte{}
	for len(p) > 0 {
		kl := int(p[0])
		if len(p) < 1+kl+2 {
			return 0, nil, errors.New("truncated key")
		}
		k := string(p[1 : 1+kl])
		vl := int(binary.BigEndian.Uint16(p[1+kl:]))
		p = p[1+kl+2:]
		if len(p) < vl {
			return 0, nil, errors.New("truncated value")
		}
		kv[k] = slices.Clone(p[:vl])
		p = p[vl:]
	}
	return seq, kv, nil
}

// syncDir syncs the directory holding path, so that a rename into it is durable.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
