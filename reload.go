package healthroute

import (
	"context"
	"github.com/healthroute/healthroute/routing"
	"time"

	"github.com/healthroute/healthroute/internal/watch"
)

// newResolver returns the routing engine for cfg, with the plugin's metrics and logs
// on each publication and the latency table parse loaded (or, for a Config built
// without parse, the one it names).
func newResolver(cfg *blockConfig) *routing.Resolver {
	r := routing.New(&cfg.Config)
	r.OnPublish = func(prev, next *routing.Table, took time.Duration) { observePublication(r, prev, next, took) }
	switch {
	case cfg.latency != nil: // parse loaded it; the watcher replaces it from here on
		r.Latency.Store(cfg.latency)
		cfg.latency = nil
	case cfg.LatencyTable != "": // a Config built without parse
		if _, err := r.LoadLatency(cfg.LatencyTable, cfg.fileLimit()); err != nil {
			log.Errorf("latency_table: %v", err)
		}
	}
	return r
}

// watchLatencyTable reloads the table at path into r whenever the file changes or
// is replaced (see internal/watch), checking every period, until ctx ends. The
// first check reloads: the file may have changed since setup read it. A file that
// fails to load is logged and the last good table keeps serving.
func watchLatencyTable(ctx context.Context, r *routing.Resolver, path string, limit int64, period time.Duration) {
	watch.Poll(ctx, period, []string{path}, nil, func() bool {
		t, err := r.LoadLatency(path, limit)
		if err != nil {
			log.Errorf("latency_table: keeping the previous table: %v", limitHint(err))
			return true // tried again once the file changes again
		}
		log.Debugf("latency_table: loaded %s (%d prefixes)", path, t.Rows.Len())
		return true
	})
}
