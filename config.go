package healthroute

import (
	"fmt"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/health/fleet"
	"github.com/healthroute/healthroute/internal/watch"
	"github.com/healthroute/healthroute/routing"
)

// blockConfig is a parsed and validated healthroute block: what routing reads, and
// what only the plugin needs.
type blockConfig struct {
	routing.Config
	LatencyTable string                // path of the latency CSV, "" for none
	latency      *routing.LatencyTable // the table parse loaded, taken by newResolver
	API          *apiConfig            // nil: no HTTP API
	Webhook      *webhookConfig        // nil: no status-change notifications
	MaxInFlight  int
	MaxFileSize  int64             // size limit of the route53 and latency_table files; 0: watch.DefaultLimit
	Fleet        *fleet.Config     // nil: this instance judges alone
	Route53      *route53Config    // nil: no route53 property
	Controls     *controlsConfig   // nil: no routing controls
	R53API       *route53APIConfig // nil: no Route 53-compatible API
	DataDir      string            // where each check's last judged state outlives the process; "": nowhere
	controlsDir  string            // the default data directory, from the server's root

	parsing *parseState // what parsing needs beyond the blockConfig; parse drops it
}

// parseState is what parsing a block needs beyond the blockConfig: parse drops it once the block is validated, so a
// running server does not keep it.
type parseState struct {
	checkNames map[*routing.Member]string // each member's check as written, for validate to resolve
	pos        map[*routing.Member]pos    // where each member was written, for validate's errors
	setPos     map[*routing.RecordSet]pos // and each record block
	// One copy of the values that members repeat across names, for members to share:
	// targets (by key, see share), and default set identifiers.
	refs map[string]*routing.Ref
	ids  map[string]string
	key  []byte // share's scratch

	// Where each location line was given, for validateAZ's errors.
	azDeclPos   map[string]pos         // az_location lines, by AZ ID
	azWhere     map[*routing.AZKey]pos // each location key's line
	azClientPos []pos                  // client_location lines, in order

	// node is the running replicated state's node, nil when none runs: the
	// route53_api's record sets are read from it.
	node *control.Node

	soaSet bool // the soa property set the serial and timers
	nsPos  pos  // where ns was given
}

// state returns cfg's parse state, creating it.
func (cfg *blockConfig) state() *parseState {
	if cfg.parsing == nil {
		cfg.parsing = &parseState{checkNames: map[*routing.Member]string{}, pos: map[*routing.Member]pos{}, setPos: map[*routing.RecordSet]pos{},
			refs: map[string]*routing.Ref{}, ids: map[string]string{}, azDeclPos: map[string]pos{}, azWhere: map[*routing.AZKey]pos{}}
	}
	return cfg.parsing
}

// share returns the one Ref of the addresses or the target name r holds (not other
// types' values, which are named for their record set), keeping r as it for the
// members to come.
func (ps *parseState) share(r routing.Ref) *routing.Ref {
	k := ps.key[:0]
	if r.Addrs == nil {
		k = append(append(k, 'n'), r.Target...)
	} else {
		k = append(k, 'a')
		for _, a := range r.Addrs {
			b := a.As16()
			k = append(append(k, routing.BoolByte(a.Is4())), b[:]...)
		}
	}
	ps.key = k
	if v, ok := ps.refs[string(k)]; ok {
		return v
	}
	v := &r
	ps.refs[string(k)] = v
	return v
}

// apiConfig is the `api ADDRESS [{ token_file FILE; history_dir DIR }]` property.
type apiConfig struct {
	Addr       string // host:port to listen on
	TokenFile  string // bearer token for overrides; "" refuses overrides (403)
	HistoryDir string // where check histories are saved across restarts; "" keeps them in memory only
	at         pos    // the api line, named when the listener cannot start
}

// pos is a place in a Corefile, for errors found after the block was read.
type pos struct {
	file string
	line int
}

// errorf formats an error the way caddy's Dispenser.Errf does, at p.
func (p pos) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d - Error during parsing: %s", p.file, p.line, fmt.Sprintf(format, args...))
}

// fileLimit returns the size limit of the block's route53 and latency_table files.
func (cfg *blockConfig) fileLimit() int64 {
	if cfg.MaxFileSize > 0 {
		return cfg.MaxFileSize
	}
	return watch.DefaultLimit
}
