package healthroute

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/health/fleet"
)

// apiServer is the HTTP API of `api ADDRESS`: the status page, the JSON views,
// explain and overrides. It reads the registry at request time, so it always shows
// the running configuration, across reloads.
type apiServer struct {
	reg  *registry
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu        sync.Mutex
	tokenFile string
}

// startAPI listens on cfg.Addr and serves until stop.
func startAPI(cfg *APIConfig, reg *registry) (*apiServer, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	s := &apiServer{reg: reg, ln: ln, done: make(chan struct{}), tokenFile: cfg.TokenFile}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.statusPage)
	mux.HandleFunc("GET /v1/checks", s.getChecks)
	mux.HandleFunc("GET /v1/records", s.getRecords)
	mux.HandleFunc("GET /v1/explain", s.getExplain)
	mux.HandleFunc("POST /v1/checks/{name}/override", s.postOverride)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Errorf("api %s: %v", cfg.Addr, err)
		}
	}()
	log.Infof("api listening on %s", ln.Addr())
	return s, nil
}

func (s *apiServer) setTokenFile(path string) {
	s.mu.Lock()
	s.tokenFile = path
	s.mu.Unlock()
}

func (s *apiServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	<-s.done
}

// CheckView is one check as the API shows it.
type CheckView struct {
	Name        string     `json:"name"`
	Type        string     `json:"type"`
	Target      string     `json:"target,omitempty"`
	Children    []string   `json:"children,omitempty"`
	Threshold   int        `json:"threshold,omitempty"`
	Interval    string     `json:"interval,omitempty"`
	Healthy     bool       `json:"healthy"`            // what routing uses now
	Probed      *bool      `json:"probed_healthy"`     // the probes' verdict before invert/disabled (nil: not probed)
	Override    *bool      `json:"override,omitempty"` // an operator's forced status
	Invert      bool       `json:"invert,omitempty"`
	Disabled    bool       `json:"disabled,omitempty"`
	Seen        bool       `json:"seen"` // has a first result
	LastError   string     `json:"last_error,omitempty"`
	LastLatency float64    `json:"last_latency_ms,omitempty"`
	LastProbe   time.Time  `json:"last_probe,omitzero"`
	LastChange  time.Time  `json:"last_change,omitzero"`
	Probes      uint64     `json:"probes"`
	Failures    uint64     `json:"failures"`
	Fleet       *FleetView `json:"fleet,omitempty"` // with a fleet: every member's report and the quorum
}

// FleetView is a check's quorum arithmetic on this instance (ROUTE53.md 2.3).
type FleetView struct {
	Healthy  int           `json:"healthy"`        // counted reports that are healthy
	Total    int           `json:"total"`          // counted reports: reachable members, fresh
	Quorum   int           `json:"quorum_percent"` // healthy when 100*healthy > quorum*total
	Kept     bool          `json:"kept"`           // nothing counted: the last status is kept
	Decision string        `json:"decision"`       // the arithmetic in words
	Members  []FleetMember `json:"members"`
}

// FleetMember is one member's latest report of a check.
type FleetMember struct {
	Member    string    `json:"member"`
	Self      bool      `json:"self,omitempty"`
	Reachable bool      `json:"reachable"`
	Counted   bool      `json:"counted"`
	Down      bool      `json:"down"`
	Seq       uint64    `json:"seq"`
	Observed  time.Time `json:"observed,omitzero"`
	Heard     time.Time `json:"heard,omitzero"`
}

// fleetView converts the fleet's view of fp.
func fleetView(v fleet.View) *FleetView {
	fv := &FleetView{Healthy: v.Healthy, Total: v.Total, Quorum: v.Quorum, Kept: v.Kept, Members: []FleetMember{}}
	switch {
	case v.Kept:
		fv.Decision = "no reachable member has a fresh report: the last status is kept"
	case 100*v.Healthy > v.Quorum*v.Total:
		fv.Decision = fmt.Sprintf("%d of %d reachable checkers healthy, more than %d%%: healthy", v.Healthy, v.Total, v.Quorum)
	default:
		fv.Decision = fmt.Sprintf("%d of %d reachable checkers healthy, not more than %d%%: unhealthy", v.Healthy, v.Total, v.Quorum)
	}
	for _, r := range v.Reports {
		fv.Members = append(fv.Members, FleetMember{Member: r.Member, Self: r.Self, Reachable: r.Reachable,
			Counted: r.Counted, Down: r.Down, Seq: r.Seq, Observed: r.Observed, Heard: r.Heard})
	}
	return fv
}

// checks returns every check of the running blocks, by name (first block wins).
func (s *apiServer) checks() []CheckView {
	sched, fl := s.reg.scheduler(), s.reg.fleet()
	over := s.reg.op.Overrides()
	seen := map[string]bool{}
	var out []CheckView
	for _, h := range s.reg.op.Instances() {
		t := h.resolver.table.Load()
		for name, spec := range h.cfg.Checks {
			if seen[name] {
				continue
			}
			seen[name] = true
			v := CheckView{Name: name, Type: spec.Type.String(), Target: spec.Target, Healthy: t.healthy(spec),
				Invert: spec.Invert, Disabled: spec.Disabled, Seen: t.snap.Seen(spec)}
			if o, ok := over[name]; ok {
				v.Override = &o
			}
			for _, c := range spec.Children {
				v.Children = append(v.Children, c.Name)
			}
			if spec.Type == health.Calculated {
				v.Threshold = spec.Threshold
			} else {
				v.Interval = spec.Interval.String()
			}
			if spec.Probed() {
				ok := !t.snap.Status(spec.Fingerprint()).Down
				v.Probed = &ok
				if fl != nil {
					v.Fleet = fleetView(fl.View(spec.Fingerprint()))
				}
				if sched != nil {
					if in, found := sched.Info(spec.Fingerprint()); found {
						v.LastError, v.LastProbe, v.LastChange = in.LastErr, in.LastProbe, in.LastChange
						v.LastLatency = float64(in.LastLatency.Microseconds()) / 1000
						v.Probes, v.Failures = in.Probes, in.Failures
					}
				}
			}
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RecordView is one record group (a record set's members of one type).
type RecordView struct {
	Name       string       `json:"name"`
	Type       string       `json:"type"`
	Policy     string       `json:"policy"`
	Healthy    *bool        `json:"healthy,omitempty"` // a healthy answer exists (nil: depends on the client)
	LastResort bool         `json:"last_resort"`       // every member unhealthy: failing open
	Members    []MemberView `json:"members"`
}

// MemberView is one member of a record group.
type MemberView struct {
	ID      string `json:"id"`
	Key     string `json:"key,omitempty"`
	Target  string `json:"target"`
	Alias   string `json:"alias,omitempty"` // the record set an alias member points to
	ETH     bool   `json:"evaluate_target_health,omitempty"`
	Check   string `json:"check,omitempty"`
	Healthy bool   `json:"healthy"` // as far as it does not depend on the client
}

// records returns every record group of the running blocks, as reached from its own
// name, in Corefile order.
func (s *apiServer) records() []RecordView {
	var out []RecordView
	for _, h := range s.reg.op.Instances() {
		t := h.resolver.table.Load()
		p := t.plan
		for _, rs := range h.cfg.Records {
			e := p.names[rs.Name]
			if e == nil {
				e = p.wild[strings.TrimPrefix(rs.Name, "*.")]
			}
			for _, n := range []*node{e.a, e.aaaa, e.cname} {
				if n == nil {
					continue
				}
				st := &t.st[n.id]
				v := RecordView{Name: rs.Name, Type: dns.TypeToString[n.qtype], Policy: rs.Policy.String()}
				if !n.dynHealth {
					hv := st.healthy
					v.Healthy, v.LastResort = &hv, st.failOpen
				}
				for i := range n.members {
					mn := &n.members[i]
					mv := MemberView{ID: mn.m.ID, Key: policyKey(mn.m, rs.Policy), Target: target(mn), Healthy: st.ok[i], ETH: mn.m.ETH}
					if mn.child != nil {
						mv.Alias = mn.m.Target
					}
					if mn.m.Check != nil {
						mv.Check = mn.m.Check.Name
					}
					v.Members = append(v.Members, mv)
				}
				out = append(out, v)
			}
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func apiError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func (s *apiServer) getChecks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"checks": s.checks()})
}

func (s *apiServer) getRecords(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"records": s.records()})
}

// ExplainView is the answer to /v1/explain.
type ExplainView struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Client string   `json:"client"`
	Rcode  string   `json:"rcode"`
	Answer []string `json:"answer"`
	Scope  uint8    `json:"ecs_scope"`
	Trace  *Trace   `json:"trace"`
}

// getExplain answers GET /v1/explain?name=N&type=T&client=IP[/PREFIX] with optional
// country, continent, subdivision, lat and lon (the geoip location to assume).
func (s *apiServer) getExplain(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("name")
	if _, ok := dns.IsDomainName(name); !ok || name == "" {
		apiError(w, http.StatusBadRequest, "name: expected a domain name")
		return
	}
	name = strings.ToLower(dns.Fqdn(name))
	qtype := dns.TypeA
	if t := q.Get("type"); t != "" {
		var ok bool
		if qtype, ok = dns.StringToType[strings.ToUpper(t)]; !ok {
			apiError(w, http.StatusBadRequest, "type: unknown record type '"+t+"'")
			return
		}
	}
	client, err := parseClient(q.Get("client"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "client: "+err.Error())
		return
	}
	loc := Location{Country: strings.ToUpper(q.Get("country")), Continent: strings.ToUpper(q.Get("continent")),
		Subdivisions: strings.ToUpper(q.Get("subdivision"))}
	if q.Get("lat") != "" || q.Get("lon") != "" {
		lat, err1 := strconv.ParseFloat(q.Get("lat"), 64)
		lon, err2 := strconv.ParseFloat(q.Get("lon"), 64)
		if err1 != nil || err2 != nil {
			apiError(w, http.StatusBadRequest, "lat, lon: expected decimal degrees")
			return
		}
		loc.Lat, loc.Lon, loc.HasCoords = lat, lon, true
	}
	var h *HealthRoute
	best := ""
	for _, inst := range s.reg.op.Instances() {
		if z := matchZone(inst.cfg.Zones, name); len(z) > len(best) || (z != "" && h == nil) {
			h, best = inst, z
		}
	}
	if h == nil {
		apiError(w, http.StatusNotFound, "no healthroute block serves "+name)
		return
	}
	ans, tr := h.resolver.Explain(Query{Name: name, Type: qtype, Client: client, Loc: loc})
	v := ExplainView{Name: name, Type: dns.TypeToString[qtype], Client: client.String(),
		Rcode: dns.RcodeToString[ans.Rcode], Answer: []string{}, Scope: ans.Scope, Trace: tr}
	for _, rr := range ans.RRs {
		v.Answer = append(v.Answer, rr.String())
	}
	writeJSON(w, http.StatusOK, v)
}

// parseClient reads IP or IP/PREFIX; "" is 0.0.0.0/32, a client the API knows nothing of.
func parseClient(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.MustParsePrefix("0.0.0.0/32"), nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, errors.New("expected IP or IP/PREFIX")
		}
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()).Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, errors.New("expected IP or IP/PREFIX")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// postOverride handles POST /v1/checks/NAME/override with healthy, unhealthy or none
// (as the body, or the form field state), authorised by the bearer token.
func (s *apiServer) postOverride(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	path := s.tokenFile
	s.mu.Unlock()
	if path == "" {
		apiError(w, http.StatusForbidden, "overrides are disabled: no token_file is configured")
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		log.Errorf("api: token_file: %v", err)
		apiError(w, http.StatusForbidden, "overrides are disabled: the token file cannot be read")
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(strings.TrimSpace(string(want)))) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="healthroute"`)
		apiError(w, http.StatusUnauthorized, "a valid bearer token is required")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1024)
	state := r.FormValue("state")
	if state == "" {
		var b [64]byte
		n, _ := r.Body.Read(b[:])
		state = strings.TrimSpace(string(b[:n]))
	}
	var v *bool
	switch state {
	case "healthy", "unhealthy":
		x := state == "healthy"
		v = &x
	case "none":
	default:
		apiError(w, http.StatusBadRequest, "state: expected healthy, unhealthy or none")
		return
	}
	name := r.PathValue("name")
	if err := s.reg.op.Override(name, v); err != nil {
		apiError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"check": name, "override": state})
}
