package view

import "time"

// History is what one check did over time: its status changes, newest last, and
// one sample a minute of its probes, oldest first.
type History struct {
	Check   string   `json:"check"`
	Changes []Change `json:"changes"`
	// Dropped counts older changes no longer kept (the log keeps the latest ones).
	Dropped uint64   `json:"dropped_changes"`
	Minutes []Minute `json:"minutes"`
}

// Change is one change of a check's status.
type Change struct {
	Time   time.Time `json:"time"`
	From   string    `json:"from"`   // healthy or unhealthy
	To     string    `json:"to"`     // healthy or unhealthy
	Reason string    `json:"reason"` // the last probe error, or why it passed
	// Members are the fleet members whose counted reports agreed with the new
	// status when it was decided (with a fleet; empty without one).
	Members []string `json:"members,omitempty"`
}

// Minute is one minute of a check's probes.
type Minute struct {
	Time      time.Time `json:"time"` // the minute's start
	Probes    int       `json:"probes"`
	Failures  int       `json:"failures"`
	Down      bool      `json:"down"` // unhealthy at some time in the minute
	LatencyMs float64   `json:"latency_avg_ms"`
	MaxMs     float64   `json:"latency_max_ms"`
}

// Phases is how long the parts of a probe took, in milliseconds; a phase the probe
// does not have (TLS on a plain connection) or did not reach is omitted.
type Phases struct {
	ConnectMs   float64 `json:"connect_ms,omitempty"`
	TLSMs       float64 `json:"tls_ms,omitempty"`
	FirstByteMs float64 `json:"first_byte_ms,omitempty"`
	TotalMs     float64 `json:"total_ms"`
}

// Timeline is a check's recent past in equal slots, oldest first: for the status
// page's timeline and latency sparkline.
type Timeline struct {
	Slots   []int8    // -1 no probe in the slot, 0 healthy throughout, 1 unhealthy at some time
	Latency []float64 // average probe latency in the slot, ms; -1 for none
	Changes int       // status changes in the span
}

// CheckChange is a change of the check named Check.
type CheckChange struct {
	Check string `json:"check"`
	Change
}

// OpenSpan is a time a record group failed open (every member unhealthy).
type OpenSpan struct {
	Record string    `json:"record"`
	Type   string    `json:"type"`
	Policy string    `json:"policy"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitzero"` // zero: failing open now
}
