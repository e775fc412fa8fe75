package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/healthroute/healthroute/view"
)

// How often views are built again (see current): after a health change, once the
// last build is healthShare times as old as it took; for what changes without one
// (probe counts and times, the fleet's reports), once it is detailShare times as
// old, and at least detailAge. So building takes at most 1/healthShare of a core
// however often health changes, 1/detailShare when it does not, and views of a
// small configuration follow health at once and the rest within detailAge.
const (
	healthShare = 20
	detailShare = 100
	detailAge   = 250 * time.Millisecond
)

// maxCachedPages bounds the renderings kept per state (pages and searches).
const maxCachedPages = 32

// epoch tells this process's entity tags from an earlier one's.
var epoch = rand.Uint64()

// views is what one API shows for one state of its blocks: the checks, the record
// groups and the status page model, built once; their JSON encodings and page
// renderings, made on first use and kept with them.
type views struct {
	etag    string // weak: the same tag means the same health, overrides and configuration
	version uint64 // the operator's version it was built for
	built   time.Time
	took    time.Duration // building them
	checks  []view.Check  // by name
	records []view.Record
	model   *statusModel

	jsonOnce                sync.Once
	checksJSON, recordsJSON []byte

	mu    sync.Mutex
	pages map[string][]byte // by pageQuery.key
}

// stateTag identifies the state of the blocks the API shows: the operator's
// version (blocks, overrides), also returned, and each block's snapshot
// generation. It is read before the views, so views built from a later state are at
// worst rebuilt once more.
func (s *server) stateTag() (string, uint64) {
	version := s.op.version.Load()
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", epoch, version)
	for _, b := range s.op.blocksOf(s.scope) {
		fmt.Fprintf(h, "/%d", b.Generation())
	}
	return fmt.Sprintf(`W/"%x"`, h.Sum64()), version
}

// current returns the views of the current state. They are built again at once
// when blocks or overrides changed, and otherwise as the constants above say. One
// build runs at a time; requests arriving meanwhile wait for it rather than build
// their own.
func (s *server) current() *views {
	tag, version := s.stateTag()
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	now := time.Now()
	if v := s.cache; v != nil && v.version == version {
		age := now.Sub(v.built)
		fresh := age < max(detailAge, detailShare*v.took)
		if v.etag != tag {
			fresh = age < healthShare*v.took
		}
		if fresh {
			return v
		}
	}
	blocks := s.op.blocksOf(s.scope)
	v := &views{etag: tag, version: version, built: now, checks: checksOf(blocks), records: recordsOf(blocks)}
	v.model = buildStatus(v.checks, v.records, now)
	if cs := s.op.controls(); cs != nil {
		cv := viewOf(cs, cs.Node.State(), 20)
		v.model.controls = &cv
	}
	v.model.blocks = blocks
	v.took = time.Since(now)
	s.cache = v
	return v
}

// checksOf returns every check of blocks, by name (the first block defining a name wins).
func checksOf(blocks []Block) []view.Check {
	seen := map[string]bool{}
	var out []view.Check
	for _, b := range blocks {
		for _, c := range b.Checks() {
			if !seen[c.Name] {
				seen[c.Name] = true
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// recordsOf returns every record group of blocks, block by block.
func recordsOf(blocks []Block) []view.Record {
	var out []view.Record
	for _, b := range blocks {
		out = append(out, b.Records()...)
	}
	return out
}

// json returns the encodings of /v1/checks and /v1/records.
func (v *views) json() (checks, records []byte) {
	v.jsonOnce.Do(func() {
		checks := v.checks
		if checks == nil {
			checks = []view.Check{}
		}
		v.checksJSON = encodeJSON(map[string]any{"checks": checks})
		v.recordsJSON = encodeJSON(map[string]any{"records": v.records})
	})
	return v.checksJSON, v.recordsJSON
}

func encodeJSON(x any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.Encode(x)
	return b.Bytes()
}

// page returns the rendering of q, rendering it (within gate) when it is not cached.
func (v *views) page(ctx context.Context, g gate, q pageQuery) ([]byte, error) {
	k := q.key()
	v.mu.Lock()
	b, ok := v.pages[k]
	v.mu.Unlock()
	if ok {
		return b, nil
	}
	if err := g.enter(ctx); err != nil {
		return nil, err
	}
	defer g.leave()
	b, err := v.model.render(q)
	if err != nil {
		log.Errorf("api: status page: %v", err)
		return nil, err
	}
	v.mu.Lock()
	if v.pages == nil {
		v.pages = map[string][]byte{}
	}
	if len(v.pages) < maxCachedPages {
		v.pages[k] = b
	}
	v.mu.Unlock()
	return b, nil
}

// gate bounds how many costly requests (renderings, explanations) run at once.
type gate chan struct{}

var errBusy = errors.New("busy")

// enter waits up to expensiveWait for a turn.
func (g gate) enter(ctx context.Context) error {
	select {
	case g <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(expensiveWait)
	defer t.Stop()
	select {
	case g <- struct{}{}:
		return nil
	case <-t.C:
		return errBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g gate) leave() { <-g }

// busy answers a request that found no turn (or failed to render).
func busy(w http.ResponseWriter, err error) {
	if errors.Is(err, errBusy) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		w.Header().Set("Retry-After", "1")
		apiError(w, http.StatusServiceUnavailable, "busy: too many costly requests at once; try again")
		return
	}
	apiError(w, http.StatusInternalServerError, "the response failed to render")
}

// notModified sets the entity tag and the caching rule on w and, when the request's
// If-None-Match holds etag, answers 304 Not Modified and reports true.
func notModified(w http.ResponseWriter, r *http.Request, etag string) bool {
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache") // kept, but asked again each time
	bare := strings.TrimPrefix(etag, "W/")
	for t := range strings.SplitSeq(r.Header.Get("If-None-Match"), ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == bare { // the weak comparison of RFC 9110
			w.WriteHeader(http.StatusNotModified)
			return true
		}
	}
	return false
}
