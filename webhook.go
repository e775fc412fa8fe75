package healthroute

import (
	"fmt"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/notify"
	"github.com/healthroute/healthroute/routing"
)

// sharedNotifier is a webhook notifier and the blocks that use it: a reload's
// blocks take over their predecessors' queue, so no event is lost or reordered
// across a reload that keeps the webhook.
type sharedNotifier struct {
	n    *notify.Notifier
	refs int
}

// acquireNotifier returns the notifier of w (by URL and secret), starting it for
// the first block.
func (r *registry) acquireNotifier(w *webhookConfig) *notify.Notifier {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := w.URL + "\x00" + string(w.Secret)
	if r.notifiers == nil {
		r.notifiers = map[string]*sharedNotifier{}
	}
	sn := r.notifiers[key]
	if sn == nil {
		sn = &sharedNotifier{n: notify.New(w.URL, w.Secret)}
		r.notifiers[key] = sn
	}
	sn.refs++
	return sn.n
}

// releaseNotifier drops a block's use of w's notifier, stopping it after the last.
func (r *registry) releaseNotifier(w *webhookConfig) {
	r.mu.Lock()
	key := w.URL + "\x00" + string(w.Secret)
	sn := r.notifiers[key]
	var stop *notify.Notifier
	if sn != nil {
		if sn.refs--; sn.refs == 0 {
			delete(r.notifiers, key)
			stop = sn.n
		}
	}
	r.mu.Unlock()
	if stop != nil {
		stop.Stop()
	}
}

// notifyPublication sends the block's webhook an event for each check whose
// health, as routing uses it, changed between prev and t, and for each record
// group that started or stopped failing open. It runs in the publish hook: Send
// only queues.
func (h *HealthRoute) notifyPublication(prev, t *routing.Table) {
	n := h.notifier.Load()
	if n == nil || prev == nil {
		return
	}
	now := time.Now().UTC()
	checks, nodes := t.Flipped, t.Changed
	if checks == nil {
		checks = h.resolver.Plan.Checks
	}
	if nodes == nil {
		nodes = h.resolver.Plan.Nodes
	}
	for _, s := range checks {
		was, is := prev.Healthy(s), t.Healthy(s)
		if was == is {
			continue
		}
		n.Send(notify.Event{Time: now, Kind: "check", Check: s.Name, From: healthWord(was), To: healthWord(is),
			Reason: h.changeReason(t, s.Name, is), Zones: h.cfg.Zones})
	}
	for _, nd := range nodes {
		was, is := prev.State(nd.ID).FailOpen, t.State(nd.ID).FailOpen
		if was == is || nd.DynHealth {
			continue
		}
		ev := notify.Event{Time: now, Kind: "record", Record: nd.Set.Name, Type: dns.TypeToString[nd.QType], Policy: nd.Set.Policy.String(),
			From: "healthy", To: "failing_open", Reason: "every member is unhealthy: answering as if all were healthy (last resort)", Zones: h.cfg.Zones}
		if !is {
			ev.From, ev.To, ev.Reason = "failing_open", "healthy", "a member is healthy again"
		}
		n.Send(ev)
	}
}

// changeReason says why check name is now healthy (or not) in t: an operator's
// override, else its latest probe error, else that its probes pass.
func (h *HealthRoute) changeReason(t *routing.Table, name string, healthy bool) string {
	if o, ok := t.Over[name]; ok {
		return fmt.Sprintf("operator override: %s", healthWord(o))
	}
	spec := h.cfg.Checks[name]
	if spec != nil && spec.Probed() {
		if sched := h.sched; sched != nil {
			if in, ok := sched.Info(spec.Fingerprint()); ok && in.LastErr != "" && !healthy {
				return in.LastErr
			}
		}
	}
	if spec != nil && !spec.Probed() {
		return "its children's health changed"
	}
	if healthy {
		return "probes pass"
	}
	return "the fleet's quorum says unhealthy"
}

func healthWord(healthy bool) string {
	if healthy {
		return "healthy"
	}
	return "unhealthy"
}
