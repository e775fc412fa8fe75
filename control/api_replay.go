package control

import (
	"encoding/json"
	"maps"
	"time"
)

// The replicated state remembers the signed Route 53 API requests that asked for
// a change, so that a captured request sent again (to any member, after any
// restart) changes nothing: a SigV4 signature is valid for MaxSkew on either side
// of its signed time, and an HTTP client that lost an answer sends the same
// request again within that time.
const (
	// MaxSignedRequests is how many signed requests the state remembers; past it
	// the oldest is forgotten and Floor rises to its signed time.
	MaxSignedRequests = 4096
	// SignedWindow is how long after its signed time a request is remembered: the
	// 5 minutes a signature is valid after it, and as much again for members'
	// clocks apart. A request is forgotten only by raising Floor past it.
	SignedWindow = 10 * time.Minute
)

// Codes of a signed request the state refuses (Refusal.Code).
const (
	// CodeRequestReplayed: the request was decided before; it changes nothing again.
	CodeRequestReplayed = "RequestReplayed"
	// CodeRequestTooOld: the request was signed at or before Floor, so whether it
	// was decided before is no longer known; signed again it is decided.
	CodeRequestTooOld = "RequestTooOld"
)

// APIRequest identifies the signed HTTP request an APICommand came from.
type APIRequest struct {
	Digest string    `json:"digest"` // of the request's signature, which covers its method, path, query, body and signed time
	Signed time.Time `json:"signed"` // its signed time (X-Amz-Date)
}

// SignedRequest is one request the state remembers, and what it answered.
type SignedRequest struct {
	APIRequest
	Answer string `json:"answer,omitempty"` // the change ID or health check ID it was given; "" when refused
}

// Replays are the signed requests the state remembers, oldest decided first. It
// is replaced whole by a command that adds one, never changed in place.
type Replays struct {
	// Floor: every request forgotten was signed at or before it, so a request
	// signed at or before it is refused.
	Floor   time.Time       `json:"floor"`
	Decided []SignedRequest `json:"decided"`
	index   map[string]int  // digest -> position in Decided
}

// UnmarshalJSON reads Replays and indexes them.
func (r *Replays) UnmarshalJSON(b []byte) error {
	type plain Replays
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = Replays(p)
	r.reindex()
	return nil
}

func (r *Replays) reindex() {
	r.index = make(map[string]int, len(r.Decided))
	for i, d := range r.Decided {
		r.index[d.Digest] = i
	}
}

// Replayed returns the request of digest and true when the state remembers it.
func (a *APIState) Replayed(digest string) (SignedRequest, bool) {
	if a == nil || a.Replays == nil {
		return SignedRequest{}, false
	}
	i, ok := a.Replays.index[digest]
	if !ok {
		return SignedRequest{}, false
	}
	return a.Replays.Decided[i], true
}

// ReplayFloor is the signed time at or before which a request is refused.
func (a *APIState) ReplayFloor() time.Time {
	if a == nil || a.Replays == nil {
		return time.Time{}
	}
	return a.Replays.Floor
}

// checkSigned refuses a request the state remembers, or one too old to tell.
func (a *APIState) checkSigned(req *APIRequest) error {
	if req == nil {
		return nil
	}
	if _, ok := a.Replayed(req.Digest); ok {
		return apiRefusal(CodeRequestReplayed, "this signed request was decided before (a request changes the state once): sign it again, with a new X-Amz-Date, to ask again")
	}
	if f := a.ReplayFloor(); !req.Signed.After(f) {
		return apiRefusal(CodeRequestTooOld, "this request was signed at %s, at or before the oldest signed change this fleet remembers (%s): sign it again",
			req.Signed.UTC().Format(time.RFC3339), f.UTC().Format(time.RFC3339))
	}
	return nil
}

// remember returns a's Replays with req added, answered answer, and those
// signed more than SignedWindow before now, or past MaxSignedRequests,
// forgotten from the oldest decided: work bounded by what is forgotten.
func (a *APIState) remember(req *APIRequest, answer string, now time.Time) *Replays {
	var old Replays
	if a.Replays != nil {
		old = *a.Replays
	}
	r := &Replays{Floor: old.Floor, Decided: make([]SignedRequest, 0, min(len(old.Decided)+1, MaxSignedRequests+1))}
	drop := 0
	for drop < len(old.Decided) && (len(old.Decided)-drop >= MaxSignedRequests || old.Decided[drop].Signed.Before(now.Add(-SignedWindow))) {
		if s := old.Decided[drop].Signed; s.After(r.Floor) {
			r.Floor = s
		}
		drop++
	}
	r.Decided = append(r.Decided, old.Decided[drop:]...)
	r.Decided = append(r.Decided, SignedRequest{APIRequest: *req, Answer: answer})
	if drop == 0 && old.index != nil {
		r.index = maps.Clone(old.index)
		r.index[req.Digest] = len(r.Decided) - 1
	} else {
		r.reindex()
	}
	return r
}

// answerOf is what a command's request is remembered as answering.
func answerOf(c *APICommand) string {
	if c.CreateCheck != nil {
		return c.CreateCheck.Id
	}
	return c.ChangeID
}
