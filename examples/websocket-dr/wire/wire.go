// Package wire is the JSON protocol between the example's clients and regions, and
// between the two regions. Every WebSocket message is one text frame holding one
// Message; the server only ever answers, it never speaks first, so a health check
// that sends {"type":"heartbeat"} reads the pong as the first frame.
package wire

import "time"

// Message types.
const (
	Hello     = "hello"     // client → region: resume the session of User
	Welcome   = "welcome"   // region → client: the session as this region holds it
	Heartbeat = "heartbeat" // client (or health check) → region
	Pong      = "pong"      // region → client: answers the heartbeat with the same ID
	Write     = "write"     // client → region: append Value to the session
	Ack       = "ack"       // region → client: the write with ID is Version
	Error     = "error"     // region → client: the request with ID was refused
)

// Message is one frame. Fields a type does not use are left out.
type Message struct {
	Type    string   `json:"type"`
	ID      uint64   `json:"id,omitempty"`
	User    string   `json:"user,omitempty"`
	Region  string   `json:"region,omitempty"`
	Value   string   `json:"value,omitempty"`
	Version uint64   `json:"version,omitempty"`
	Log     []string `json:"log,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Session is one user's state, keyed by user ID (never by connection: a reconnect is
// a new connection, possibly to the other region). Version counts the writes applied;
// the higher version wins when regions exchange sessions.
type Session struct {
	User    string    `json:"user"`
	Version uint64    `json:"version"`
	Log     []string  `json:"log"` // the last writes, oldest first
	Updated time.Time `json:"updated"`
}
