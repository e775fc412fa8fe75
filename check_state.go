package healthroute

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/internal/atomicfile"
)

// checkStateFile is the file in the data directory (data_dir) that keeps each check's
// last judged state, so that a restarted process starts from what it knew.
const checkStateFile = "healthroute-checks.json"

// checkStateFresh is how old a saved state may be for a restarted process to start
// from it; an older one is forgotten and the check starts as a new check does
// (healthy until its first full threshold window).
const checkStateFresh = 5 * time.Minute

// checkStateSave is how often the keeper looks for changed statuses to save;
// checkStateRefresh is how often it saves anyway, to keep the judged times fresh.
const (
	checkStateSave    = time.Second
	checkStateRefresh = time.Minute
)

// maxCheckStateFile bounds what the keeper reads at start: a state file this large
// is not ours (a check's entry is about 100 bytes).
const maxCheckStateFile = 256 << 20

// savedChecks is the state file's content.
type savedChecks struct {
	Version int                     `json:"version"`
	Checks  map[string]health.Saved `json:"checks"` // by check fingerprint
}

// stateKeeper keeps the scheduler's judged check states in the data directory: it
// saves them within checkStateSave of a published change, every checkStateRefresh
// otherwise, and once more when the last block shuts down. The saved states of
// checks no block holds any more are kept while they are fresh, so a reload that
// drops a check and a restart that brings it back lose nothing.
type stateKeeper struct {
	sched *health.Scheduler
	dir   string
	dirty atomic.Bool // a snapshot was published since the last save

	mu    sync.Mutex
	known map[string]health.Saved // the states saved last, merged with the scheduler's

	unsub func()
	stop  chan struct{}
	done  chan struct{}
}

// loadCheckStates reads the state file in dir; a missing file is no state.
func loadCheckStates(dir string) (map[string]health.Saved, error) {
	f, err := os.Open(filepath.Join(dir, checkStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var saved savedChecks
	dec := json.NewDecoder(io.LimitReader(f, maxCheckStateFile))
	if err := dec.Decode(&saved); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	if saved.Version != 1 {
		return nil, fmt.Errorf("%s: version %d, expected 1", f.Name(), saved.Version)
	}
	return saved.Checks, nil
}

// startStateKeeper loads the states saved in dir, hands the fresh ones to sched (for
// the checks acquired after it) and keeps saving there until close.
func startStateKeeper(sched *health.Scheduler, dir string) *stateKeeper {
	known, err := loadCheckStates(dir)
	if err != nil {
		log.Errorf("data_dir: %v: every check starts as new", err)
	}
	now := time.Now()
	sched.Restore(known, checkStateFresh, now)
	if len(known) > 0 {
		log.Infof("data_dir: %d check states saved by the previous process; those judged within %s are used", len(known), checkStateFresh)
	}
	k := &stateKeeper{sched: sched, dir: dir, known: known, stop: make(chan struct{}), done: make(chan struct{})}
	k.unsub = sched.Subscribe(func(*health.Snapshot) { k.dirty.Store(true) })
	go k.run()
	return k
}

func (k *stateKeeper) run() {
	defer close(k.done)
	t := time.NewTicker(checkStateSave)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		if k.dirty.Swap(false) || time.Since(last) >= checkStateRefresh {
			k.save(true)
			last = time.Now()
		}
	}
}

// mergeLocked folds the scheduler's judged states into the known ones and drops those
// too old to be used. k.mu must be held.
func (k *stateKeeper) mergeLocked(now time.Time) {
	if k.known == nil {
		k.known = map[string]health.Saved{}
	}
	for fp, st := range k.known {
		if now.Sub(st.Judged) > checkStateFresh {
			delete(k.known, fp)
		}
	}
	for fp, st := range k.sched.Judged() {
		k.known[fp] = st
	}
}

// note merges the scheduler's judged states now: a block calls it before releasing
// its checks, so that the last save still has them.
func (k *stateKeeper) note() {
	k.mu.Lock()
	k.mergeLocked(time.Now())
	k.mu.Unlock()
}

// save writes the state file, merging the scheduler's judged states first when
// merge is set.
func (k *stateKeeper) save(merge bool) {
	k.mu.Lock()
	if merge {
		k.mergeLocked(time.Now())
	}
	b, err := json.Marshal(savedChecks{Version: 1, Checks: k.known})
	k.mu.Unlock()
	if err == nil {
		err = atomicfile.Write(filepath.Join(k.dir, checkStateFile), b, 0o600)
	}
	if err != nil {
		log.Errorf("data_dir: saving the check states: %v", err)
	}
}

// close stops the keeper and saves once more, without merging: the scheduler has
// released the checks of the last block by now (note ran before that).
func (k *stateKeeper) close() {
	k.unsub()
	close(k.stop)
	<-k.done
	k.save(false)
}
