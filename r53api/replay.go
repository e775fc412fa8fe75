package r53api

import (
	"context"
	"errors"
	"net/http"

	"github.com/healthroute/healthroute/control"
)

// A signed request that asks for a change is decided once, fleet-wide: the
// replicated state remembers its signature's digest (control.Replays), whether
// it applied or was refused, and the member it is sent to again refuses it, or,
// for a change batch that applied, answers what it answered then (an SDK that
// lost the answer asks again with the same signature within the same second).
// Reads are not remembered: as on Route 53, a signed read may be sent again
// while its signature is valid, so identical parallel reads all succeed.

type signedCtx struct{}

// signedOf returns the signed request a request's context carries, nil if none.
func signedOf(ctx context.Context) *control.APIRequest {
	r, _ := ctx.Value(signedCtx{}).(*control.APIRequest)
	return r
}

// replayRefusal is the answer to a request the state remembers (ok), nil if it
// does not.
func replayRefusal(_ control.SignedRequest, ok bool) *apiError {
	if !ok {
		return nil
	}
	return errInput("This signed request was decided before, and a signed request changes the state once: sign it again (a new X-Amz-Date) to ask again")
}

// signedRefusal answers the state machine's refusal of a signed request: one
// remembered, or one signed too long ago to tell (Throttling: the fleet decided
// more signed changes within SignedWindow than it remembers, and an SDK's retry
// is signed anew).
func signedRefusal(ref *control.Refusal) *apiError {
	if ref.Code == control.CodeRequestTooOld {
		return newErr(http.StatusBadRequest, "Throttling", "Rate exceeded: "+ref.Reason)
	}
	return replayRefusal(control.SignedRequest{}, true)
}

// refused records in the replicated state that the signed request of ctx was
// refused by this member, for what the zone or the state held then, so that
// sent again once they changed, it is not decided afresh: a command that
// carries its request and changes nothing is refused by the state machine, and
// its request remembered. A member that reaches no leader only logs it.
func (s *Server) refused(ctx context.Context) {
	req, n := signedOf(ctx), s.be.Node()
	if req == nil || n == nil {
		return
	}
	if _, known := s.state().Replayed(req.Digest); known {
		return
	}
	err := n.Change(ctx, control.Request{Token: keyOf(ctx), Member: n.Name(), API: &control.APICommand{Request: req}})
	var ref *control.Refusal
	if !errors.As(err, &ref) {
		s.logf("remember", "route53_api: a refused request could not be remembered as decided (sent again, it is checked again): %v", err)
	}
}

// replayedChange answers a change batch sent again after it applied as it was
// answered then (its change, with its status now) and reports whether it did.
func (s *Server) replayedChange(w http.ResponseWriter, r *http.Request) bool {
	req := signedOf(r.Context())
	if req == nil {
		return false
	}
	d, ok := s.state().Replayed(req.Digest)
	if !ok || d.Answer == "" {
		return false
	}
	s.writeChange(w, d.Answer, func(ci changeInfo) any {
		return changeResourceRecordSetsResponse{Xmlns: Namespace, ChangeInfo: ci}
	})
	return true
}
