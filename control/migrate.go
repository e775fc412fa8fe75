package control

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// walDir is where versions before the bbolt log kept theirs (raft-wal).
const walDir = "wal"

// The raft keys of the stable store, as hashicorp/raft writes them.
var stableKeys = [][]byte{[]byte("CurrentTerm"), []byte("LastVoteTerm"), []byte("LastVoteCand")}

// migrateWAL moves the log of an older version (dir/wal, raft-wal) into store
// when store is new, then renames dir/wal to wal.migrated (kept for the operator
// to delete). A raft-wal log that cannot be read (raft-wal v0.4.0 panics on some,
// hashicorp/raft-wal#31) is renamed to wal.unreadable and left out: the member
// then starts with an empty log, and the state checks of openDir decide whether
// it waits for the other voters or refuses to start.
func migrateWAL(dir string, store *logStore, logger hclog.Logger) error {
	src := filepath.Join(dir, walDir)
	entries, err := os.ReadDir(src)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("raft log of an earlier version in %s: %v", src, err)
	}
	if len(entries) == 0 {
		return os.Remove(src)
	}
	if last, err := store.LastIndex(); err != nil || last != 0 {
		return err // migrated already (the rename did not happen): keep the new log
	}
	n, err := copyWAL(src, store, logger)
	to := filepath.Join(dir, "wal.migrated")
	if err != nil {
		to = filepath.Join(dir, fmt.Sprintf("wal.unreadable-%d", time.Now().Unix()))
		log.Errorf("control: the raft log of an earlier version in %s is unreadable (%v): moved to %s; this member starts without it", src, err, to)
		if derr := store.DeleteRange(0, ^uint64(0)); derr != nil {
			return derr
		}
	} else {
		log.Infof("control: moved %d raft log entries from %s into %s; the old log is kept in %s", n, src, logFile, to)
	}
	return os.Rename(src, to)
}

// copyWAL copies every entry and the stable keys of the raft-wal log in src.
func copyWAL(src string, store *logStore, logger hclog.Logger) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	meta := &metadb.BoltMetaDB{}
	defer meta.Close()
	w, err := wal.Open(src, wal.WithLogger(logger), wal.WithMetaStore(meta))
	if err != nil {
		return 0, err
	}
	defer w.Close()
	first, err := w.FirstIndex()
	if err != nil {
		return 0, err
	}
	last, err := w.LastIndex()
	if err != nil {
		return 0, err
	}
	var batch []*raft.Log
	for i := first; i != 0 && i <= last; i++ {
		l := new(raft.Log)
		if err := w.GetLog(i, l); err != nil {
			return n, fmt.Errorf("entry %d: %v", i, err)
		}
		if l.Type == raft.LogConfiguration {
			if err := decodeConfiguration(l.Data); err != nil {
				return n, fmt.Errorf("entry %d: %v", i, err)
			}
		}
		batch = append(batch, l)
		if len(batch) == 256 || i == last {
			if err := store.StoreLogs(batch); err != nil {
				return n, err
			}
			n += len(batch)
			batch = batch[:0]
		}
	}
	for _, k := range stableKeys { // raft-wal stores integers little-endian, this store big-endian
		v, err := w.Get(k)
		if err != nil {
			return n, err
		}
		switch {
		case v == nil:
			continue
		case string(k) == "LastVoteCand":
			err = store.Set(k, v)
		case len(v) == 8:
			err = store.SetUint64(k, binary.LittleEndian.Uint64(v))
		default:
			err = fmt.Errorf("stable key %s: %d bytes, expected 8", k, len(v))
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
