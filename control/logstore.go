package control

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// logFile is the raft log in the data directory: a bbolt database, every write a
// synced transaction. Raft's stable store (current term, vote) is beside it, in
// termFileName; versions before it kept them in this database's stable bucket.
//
// It replaces the raft-wal log of earlier versions (see migrateWAL), whose v0.4.0
// panics with "sealed segment has no index block" on every start after raft
// truncated an uncommitted suffix (hashicorp/raft-wal#31). raft-boltdb/v2 would be
// the usual choice, but its v2.3.1 imports go-metrics/compat, which the
// go-metrics that memberlist v0.7.0 needs no longer has.
const logFile = "raft.db"

var (
	bucketLogs   = []byte("logs")
	bucketStable = []byte("stable")
	bucketMeta   = []byte("meta")
	keyApplied   = []byte("applied_index")
)

// errNotFound is the error raft's stable store contract expects for a missing key.
var errNotFound = errors.New("not found")

// logStore is raft's LogStore and StableStore on bbolt, with the index the state
// machine last applied.
// Each entry is stored with a CRC-32C of its encoding, checked on every read:
// bbolt checks its pages' structure, not the values in them.
type logStore struct {
	db   *bolt.DB
	term *termFile
	// failedAt is when the last write of entries failed (Unix nanoseconds), 0
	// when the last one succeeded: a member whose disk refuses its log does not
	// stand for election (mayStand).
	failedAt atomic.Int64
}

// standAfter is how long after a failed write of its log a member stands for
// election again without a write having succeeded meanwhile: when every
// member's disk was full, one must try again.
const standAfter = 10 * time.Second

// mayStand reports whether this member may ask for votes: not while its disk
// refuses its log, for a leader that cannot append steps down at once (raft),
// and would only take the leadership from a member that can.
func (s *logStore) mayStand() bool {
	at := s.failedAt.Load()
	return at == 0 || time.Since(time.Unix(0, at)) > standAfter
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// openLogStore opens (creating it when missing) the log at path and checks every
// entry it holds, so that a damaged log is refused here, with an error, rather
// than found by raft later, which panics on an entry it cannot read. bbolt panics
// on some damaged files: that is recovered into an error too. A file cut short
// (truncated) makes bbolt read pages past its end through its memory map: a
// SIGBUS (or SIGSEGV), which kills the process with "fatal error: fault" unless
// the goroutine panics on faults, as it does here while the log is opened and
// read, so that the fault is recovered into an error as well.
func openLogStore(path string) (s *logStore, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			// The database is not closed: bbolt may hold its locks where it faulted.
			if _, fault := p.(interface{ Addr() uintptr }); fault {
				p = "a memory fault reading it" + sizeNote(path)
			}
			s, err = nil, fmt.Errorf("%s is unreadable: %v", path, p)
		}
	}()
	_, statErr := os.Stat(path)
	fresh := os.IsNotExist(statErr)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("%s is unreadable: %v", path, err)
	}
	s = &logStore{db: db}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketLogs, bucketStable, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s is unreadable: %v", path, err)
	}
	if err := s.verify(); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s is damaged: %v", path, err)
	}
	if s.term, err = openTermFile(filepath.Join(filepath.Dir(path), termFileName), fresh, s.takeStable); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// takeStable moves the stable bucket's keys out of the log (where versions
// before termFileName kept them): it returns them and empties the bucket, so
// that a term file lost later cannot bring back an old term.
func (s *logStore) takeStable() (map[string][]byte, error) {
	kv := map[string][]byte{}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketStable)
		if err := b.ForEach(func(k, v []byte) error { kv[string(k)] = bytes.Clone(v); return nil }); err != nil {
			return err
		}
		for k := range kv {
			if err := b.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
	return kv, err
}

// sizeNote describes the file's size, for a memory fault: a hint it was cut short.
func sizeNote(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf(" (the file is %d bytes: cut short?)", fi.Size())
}

// verify reads every entry: contiguous indexes, each one's checksum, each found
// by its index as raft looks it up, and every configuration entry decodable
// (raft panics on one it cannot decode).
func (s *logStore) verify() error {
	return s.db.View(func(tx *bolt.Tx) error {
		var prev uint64
		b := tx.Bucket(bucketLogs)
		return b.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("a key of %d bytes in the log", len(k))
			}
			// A walk reads the pages in order; a lookup searches the keys of the
			// pages above them, which a file cut short can leave zeroed.
			if !bytes.Equal(b.Get(k), v) {
				return fmt.Errorf("entry %d is not found by its index (the log's index pages are damaged)", binary.BigEndian.Uint64(k))
			}
			var l raft.Log
			if err := decodeLog(v, &l); err != nil {
				return fmt.Errorf("entry %d: %v", binary.BigEndian.Uint64(k), err)
			}
			if l.Index != binary.BigEndian.Uint64(k) {
				return fmt.Errorf("entry %d holds index %d", binary.BigEndian.Uint64(k), l.Index)
			}
			if prev != 0 && l.Index != prev+1 {
				return fmt.Errorf("entries %d to %d are missing", prev+1, l.Index-1)
			}
			prev = l.Index
			if l.Type == raft.LogConfiguration {
				if err := decodeConfiguration(l.Data); err != nil {
					return fmt.Errorf("entry %d: %v", l.Index, err)
				}
			}
			return nil
		})
	})
}

// decodeConfiguration reports whether raft can decode a configuration entry:
// raft.DecodeConfiguration panics on one it cannot.
func decodeConfiguration(b []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("undecodable configuration: %v", p)
		}
	}()
	raft.DecodeConfiguration(b)
	return nil
}

// An entry's encoding: index, term (8 bytes each), type (1), appended at (Unix
// nanoseconds, 8), data and extensions (each a 4-byte length and its bytes),
// then the CRC-32C of all that (4).
func encodeLog(l *raft.Log) []byte {
	b := make([]byte, 0, 8+8+1+8+4+len(l.Data)+4+len(l.Extensions)+4)
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	b = append(b, l.Extensions...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func decodeLog(b []byte, l *raft.Log) error {
	if len(b) < 8+8+1+8+4+4+4 {
		return fmt.Errorf("truncated (%d bytes)", len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return errors.New("checksum mismatch")
	}
	l.Index = binary.BigEndian.Uint64(body)
	l.Term = binary.BigEndian.Uint64(body[8:])
	l.Type = raft.LogType(body[16])
	if at := int64(binary.BigEndian.Uint64(body[17:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	} else {
		l.AppendedAt = time.Time{}
	}
	rest := body[25:]
	field := func() ([]byte, error) {
		if len(rest) < 4 {
			return nil, errors.New("truncated")
		}
		n := binary.BigEndian.Uint32(rest)
		if uint64(n) > uint64(len(rest)-4) {
			return nil, errors.New("a field longer than the entry")
		}
		v := append([]byte(nil), rest[4:4+n]...)
		rest = rest[4+n:]
		return v, nil
	}
	var err error
	if l.Data, err = field(); err != nil {
		return err
	}
	if l.Extensions, err = field(); err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("trailing bytes")
	}
	return nil
}

func key(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) }

// FirstIndex implements raft.LogStore: 0 for an empty log.
func (s *logStore) FirstIndex() (uint64, error) { return s.edge((*bolt.Cursor).First) }

// LastIndex implements raft.LogStore: 0 for an empty log.
func (s *logStore) LastIndex() (uint64, error) { return s.edge((*bolt.Cursor).Last) }

// edge returns the index of the log's first or last entry, 0 for an empty log.
func (s *logStore) edge(move func(*bolt.Cursor) ([]byte, []byte)) (uint64, error) {
	var i uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := move(tx.Bucket(bucketLogs).Cursor()); k != nil {
			i = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return i, err
}

// GetLog implements raft.LogStore.
func (s *logStore) GetLog(index uint64, l *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(key(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		if err := decodeLog(v, l); err != nil {
			return fmt.Errorf("raft log entry %d: %v", index, err)
		}
		return nil
	})
}

// StoreLog implements raft.LogStore.
func (s *logStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore, in one synced transaction. A failure (a
// full disk) is counted: raft survives it (a leader steps down, a follower
// refuses the entries and is sent them again).
func (s *logStore) StoreLogs(logs []*raft.Log) error {
	err := s.storeLogs(logs)
	if err != nil {
		logWriteFailures.Inc()
		s.failedAt.Store(time.Now().UnixNano())
	} else if s.failedAt.Load() != 0 {
		s.failedAt.Store(0)
	}
	return err
}

func (s *logStore) storeLogs(logs []*raft.Log) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, l := range logs {
			if err := b.Put(key(l.Index), encodeLog(l)); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteRange implements raft.LogStore: entries min to max, inclusive.
func (s *logStore) DeleteRange(min, max uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(key(min)); k != nil && binary.BigEndian.Uint64(k) <= max; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// setApplied records that the state machine applied the log up to index: those
// entries are committed, so a start may apply them before any leader is known.
func (s *logStore) setApplied(index uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyApplied, key(index)) })
}

// applied returns the index setApplied last recorded, never past the last entry.
func (s *logStore) applied() (uint64, error) {
	var a uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyApplied); len(v) == 8 {
			a = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	last, err := s.LastIndex()
	return min(a, last), err
}

// Set implements raft.StableStore, in the term file.
func (s *logStore) Set(k, v []byte) error { return s.term.set(string(k), v) }

// Get implements raft.StableStore.
func (s *logStore) Get(k []byte) ([]byte, error) { return s.term.get(string(k)) }

// SetUint64 implements raft.StableStore.
func (s *logStore) SetUint64(k []byte, v uint64) error { return s.Set(k, key(v)) }

// GetUint64 implements raft.StableStore.
func (s *logStore) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("stable key %s: %d bytes, expected 8", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Close closes the database and the term file.
func (s *logStore) Close() error { return errors.Join(s.db.Close(), s.term.close()) }
