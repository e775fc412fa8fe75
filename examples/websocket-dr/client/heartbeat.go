package client

// heartbeat decides when a connection is dead: after MaxMisses consecutive heartbeats
// whose reply was missing (no valid pong before the next heartbeat was due) or
// invalid (a frame that is not the pong for the outstanding heartbeat). It is pure:
// the session loop owns the ticker and the socket.
type heartbeat struct {
	max     int    // consecutive misses that close the connection
	misses  int    // consecutive misses so far
	want    uint64 // ID of the outstanding heartbeat
	waiting bool   // a heartbeat was sent and not yet answered
}

// due is called when the next heartbeat, id, is to be sent. It reports false when
// the connection must be closed instead: the outstanding heartbeat was the
// max-th consecutive one without a reply.
func (h *heartbeat) due(id uint64) bool {
	if h.waiting && h.miss() {
		return false
	}
	h.want, h.waiting = id, true
	return true
}

// pong records a pong for heartbeat id. A late pong for an earlier heartbeat was
// already counted missing and is ignored; a pong for an ID never sent is invalid.
// It reports false when the connection must be closed.
func (h *heartbeat) pong(id uint64) bool {
	switch {
	case h.waiting && id == h.want:
		h.misses, h.waiting = 0, false
		return true
	case id < h.want:
		return true
	}
	return h.invalid()
}

// invalid records a frame that is no valid reply (unparseable, unknown type, an
// error). It answers the outstanding heartbeat as a miss, so one heartbeat is never
// counted twice. It reports false when the connection must be closed.
func (h *heartbeat) invalid() bool {
	h.waiting = false
	return !h.miss()
}

func (h *heartbeat) miss() bool {
	h.misses++
	return h.misses >= h.max
}
