// Package health probes endpoints in the background and publishes their status as
// immutable snapshots. The rules follow Route 53 (docs/routing.md#check-health): a new check
// is healthy, a status flips only after a run of consecutive opposite results,
// disabled forces healthy, and inversion is applied last.
package health

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Type is the kind of probe a check runs.
type Type uint8

// The check types; the names are the Corefile spellings.
const (
	HTTP Type = iota + 1
	HTTPS
	TCP
	WebSocket
	GRPC
	Calculated
	Prometheus
	// Control is a routing control: an operator's on/off switch (on: healthy),
	// never probed; its state comes from the replicated control state, as an
	// override of the check.
	Control
)

var typeNames = [...]string{HTTP: "http", HTTPS: "https", TCP: "tcp", WebSocket: "websocket",
	GRPC: "grpc", Calculated: "calculated", Prometheus: "prometheus", Control: "control"}

// String returns the Corefile spelling of t.
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// ParseType returns the Type spelled s, and false when s names no type.
func ParseType(s string) (Type, bool) {
	for t, n := range typeNames {
		if n != "" && n == s {
			return Type(t), true
		}
	}
	return 0, false
}

// NoData says how a prometheus check treats an empty query result (Route 53's
// InsufficientDataHealthStatus).
type NoData uint8

// The treatments of insufficient data; the zero value is LastKnown.
const (
	LastKnown NoData = iota
	NoDataHealthy
	NoDataUnhealthy
)

// Defaults, as Route 53 has them.
const (
	DefaultInterval  = 30 * time.Second
	DefaultFails     = 3
	MinInterval      = 100 * time.Millisecond
	httpConnect      = 4 * time.Second  // to establish the TCP connection
	HTTPResponse     = 2 * time.Second  // from connected to the status line (TLS included)
	HTTPBody         = 2 * time.Second  // then to the body, when matching a string
	TCPConnect       = 10 * time.Second // a tcp check's whole budget
	matchWindow      = 5120             // a match string must lie within these body bytes
	DefaultStatusMin = 200
	DefaultStatusMax = 399
)

// Spec is one check's definition, as parsed from the Corefile. It is immutable once
// built; the scheduler and snapshots key state by its Fingerprint.
type Spec struct {
	Name     string
	Type     Type
	Target   string        // URL for http(s), websocket, grpc and prometheus; host:port for tcp
	Interval time.Duration // time from the end of one probe to the start of the next
	Timeout  time.Duration // 0: the per-type default (as Route 53 times its probes)
	Fails    int           // consecutive failures that make a healthy check unhealthy
	Passes   int           // consecutive passes that make an unhealthy check healthy
	Host     string        // Host header and TLS SNI
	Match    string        // http(s): the body must contain it
	Status   [2]int        // http(s): accepted status codes, inclusive
	Invert   bool          // report the opposite
	Disabled bool          // always healthy, never probed

	Send    string // websocket: the heartbeat payload
	Expect  string // websocket: a reply must contain it
	Service string // grpc: the service name asked about ("" = the whole server)
	TLS     bool   // grpc: dial with TLS (certificates are not validated)

	Children  []*Spec // calculated
	Threshold int     // calculated: healthy when at least this many children are

	Query  string // prometheus: the instant query
	NoData NoData // prometheus: treatment of an empty result

	// Regions are the regions the check is to be probed from (Route 53's checker
	// regions): in a fleet, only members of these regions probe it. Checkers is how
	// many members probe it (0: every member that may). Neither is in the
	// fingerprint: they choose who measures, not what is measured.
	Regions  []string
	Checkers int
	Origin   string // where the check is defined (Corefile file:line), for warnings

	// MeasureLatency exports the phases of the check's probes as metrics (Route 53's
	// MeasureLatency). Not in the fingerprint: it changes what is exported, not what
	// is probed, so a check that only gains or loses it keeps its state.
	MeasureLatency bool

	fp string // set by Seal
}

// Seal computes and stores the fingerprint of s and its children. Call it once, when
// the spec is complete and before it is shared between goroutines.
func (s *Spec) Seal() {
	for _, c := range s.Children {
		c.Seal()
	}
	s.fp = s.fingerprint()
}

// Probed reports whether the scheduler runs probes for s. Disabled, calculated and
// control checks have no probes of their own.
func (s *Spec) Probed() bool { return !s.Disabled && s.Type != Calculated && s.Type != Control }

// Fingerprint identifies what s probes and how its state machine counts. Two specs with
// the same fingerprint share one probe schedule and one state, across server blocks,
// reloads and (with a fleet) instances. Name, Invert and Disabled are left out: they
// change how the state is read, not what is measured.
func (s *Spec) Fingerprint() string {
	if s.fp != "" {
		return s.fp
	}
	return s.fingerprint()
}

func (s *Spec) fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%d|%d|%d|%d|%q|%q|%d-%d|%q|%q|%q|%t|%d|%q|%d",
		s.Type, s.Target, s.Interval, s.Timeout, s.Fails, s.Passes, s.Host, s.Match,
		s.Status[0], s.Status[1], s.Send, s.Expect, s.Service, s.TLS, s.Threshold, s.Query, s.NoData)
	for _, c := range s.Children {
		fmt.Fprintf(&b, "|child:%t:%t:%s", c.Invert, c.Disabled, c.Fingerprint())
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:12])
}
