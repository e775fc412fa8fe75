package routing

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/healthroute/healthroute/internal/watch"
)

// LatencyTable holds measured latencies: for each client prefix, milliseconds per
// region (indexed by the plan's region ids; unknown = math.MaxUint32). It is
// immutable once built; a changed file builds a new one.
type LatencyTable struct {
	Rows PrefixIndex[[]uint32]
}

const UnknownLatency = math.MaxUint32

// MaxLatencyMs is the largest table cell: in microseconds it stays below UnknownLatency.
const MaxLatencyMs = UnknownLatency / 1000

// LoadLatencyTable reads a CSV of `client_cidr,region,milliseconds` lines (blank lines
// and lines starting with '#' skipped; an optional header line naming the columns).
// Regions not in ids are ignored: no record uses them.
// A file over limit bytes is refused, a regular file before it is read; the memory
// of a big file's load that failed is returned to the system at once.
func LoadLatencyTable(path string, ids map[string]int, limit int64) (*LatencyTable, error) {
	f, err := watch.Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ReadLatencyTable(f, path, ids)
	if watch.IsTooLarge(err) {
		err = &watch.TooLargeError{Path: path, Limit: limit}
	}
	if err != nil {
		watch.Release(f.N())
	}
	return t, err
}

func ReadLatencyTable(r io.Reader, name string, ids map[string]int) (*LatencyTable, error) {
	t := &LatencyTable{}
	rows := map[netip.Prefix][]uint32{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' || (line == 1 && strings.HasPrefix(text, "client_cidr")) {
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: expected client_cidr,region,milliseconds", name, line)
		}
		p, err := netip.ParsePrefix(strings.TrimSpace(f[0]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: invalid client_cidr '%s'", name, line, f[0])
		}
		ms, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
		if err != nil || !(ms >= 0 && ms <= MaxLatencyMs) { // !(...) refuses NaN too
			return nil, fmt.Errorf("%s:%d: invalid milliseconds '%s', expected a number from 0 to %d", name, line, f[2], MaxLatencyMs)
		}
		id, ok := ids[strings.TrimSpace(f[1])]
		if !ok {
			continue
		}
		p = p.Masked()
		row := rows[p]
		if row == nil {
			row = make([]uint32, len(ids))
			for i := range row {
				row[i] = UnknownLatency
			}
			rows[p] = row
		}
		row[id] = uint32(math.Round(ms * 1000)) // microseconds: keeps sub-ms order
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	for p, row := range rows {
		t.Rows.Add(p, row)
	}
	return t, nil
}
