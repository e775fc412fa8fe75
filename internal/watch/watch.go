// Package watch notices that a file was changed or replaced, by polling: the one
// file watcher of healthroute (latency_table, route53 exports).
//
// A file's Stamp is its identity (the device and inode the path resolves to,
// symbolic links followed) with its size, modification time and, where the system
// has one, status-change time. Any difference is a change: a file rewritten in
// place, renamed over, or replaced by swapping a symbolic link (as Kubernetes
// updates a mounted ConfigMap) is noticed even when the new file has the same size
// and modification time as the old one, because it is another inode or its
// status-change time, which no one can set back, moved.
package watch

import (
	"context"
	"os"
	"slices"
	"time"
)

// Stamp is what a watcher compares to notice that a file changed.
type Stamp struct {
	Dev, Ino uint64 // identity of the file the path resolves to (0 where unknown)
	Size     int64  // -1: the file could not be read
	Mod      int64  // modification time, ns since the epoch
	Change   int64  // status-change time, ns since the epoch (0 where unknown)
}

// Stat returns path's stamp; a path that cannot be stat'ed has Size -1.
func Stat(path string) Stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{Size: -1}
	}
	s := Stamp{Size: fi.Size(), Mod: fi.ModTime().UnixNano()}
	identify(&s, fi)
	return s
}

// Stamps returns the stamp of each path, in order.
func Stamps(paths []string) []Stamp {
	out := make([]Stamp, len(paths))
	for i, p := range paths {
		out[i] = Stat(p)
	}
	return out
}

// Poll checks paths every period until ctx ends and calls changed when a stamp
// differs from last (nil: the first check counts as a change). changed reports
// whether it took the change: when it returns false the stamps are not updated,
// and the next check calls it again.
func Poll(ctx context.Context, period time.Duration, paths []string, last []Stamp, changed func() bool) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := Stamps(paths)
		if last != nil && slices.Equal(now, last) {
			continue
		}
		if changed() {
			last = now
		}
	}
}
