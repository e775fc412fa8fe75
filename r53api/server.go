// Package r53api serves a Route 53-compatible REST API (version 2013-04-01, XML)
// for the zones of the healthroute blocks that enable it: hosted zones, record
// sets, change status, health checks and tags, authenticated with AWS Signature
// Version 4. What it changes goes into the fleet's replicated state (package
// control), from which every member builds its answers; the record sets and health
// checks are the importer's (package route53), converted as an import converts them.
package r53api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"golang.org/x/time/rate"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/internal/connlimit"
	"github.com/healthroute/healthroute/internal/ratelog"
	"github.com/healthroute/healthroute/route53"
)

var log = clog.NewWithPlugin("healthroute")

// Limits of the listener, as Route 53 keeps limits of its API.
type Limits struct {
	MaxConns int           // open connections at once; one client (an address, an IPv6 /64) holds at most MaxConnsPerClient
	MaxBody  int64         // bytes of a request body
	Rate     float64       // requests per second, per access key
	Burst    int           // requests at once above Rate, per access key
	Timeout  time.Duration // a request's whole time, body read included
}

// DefaultLimits are the limits a listener gets unless the Corefile sets others.
var DefaultLimits = Limits{MaxConns: 64, MaxBody: 1 << 20, Rate: 10, Burst: 50, Timeout: 30 * time.Second}

// MaxConnsPerClient is the most connections one client holds (or MaxConns, if
// less): enough for Terraform's 10 requests at once, and a flood of connections
// from one client churns through its own slots (internal/connlimit).
const MaxConnsPerClient = 16

// logEvery is the least time between two log lines of one kind of refusal.
const logEvery = 10 * time.Second

// Zone is a hosted zone the API serves: a block's zone that enables it.
type Zone struct {
	Name string // fully qualified, lower case
	// Corefile names the record names the Corefile defines in the zone, with
	// where ("file:line"): read-only through the API.
	Corefile map[string]string
	// Checks are the names of the Corefile's checks: API health checks may not take them.
	Checks []string
	// ReadOnly are the Corefile's record sets, as Route 53 would list them: listed
	// beside the API's, never changed through it. nil: none.
	ReadOnly *ReadOnly
	// Delegates: hosted zones created through the API at or below this zone's
	// name are served by its block (CreateHostedZone).
	Delegates bool
	// Created is a hosted zone created through the API, served by its parent's block.
	Created *control.APIHostedZone
}

// ReadOnly holds a zone's Corefile record sets; a listing's cache knows them by
// this pointer, so a reload's new Zone gets a new one.
type ReadOnly struct {
	Sets []route53.ResourceRecordSet
}

// ID returns the zone's hosted zone ID: derived from its name, so that every
// member gives the same.
func (z Zone) ID() string { return ZoneID(z.Name) }

// Observation is one checker's latest verdict on a health check.
type Observation struct {
	Checker string // the fleet member that judged
	Healthy bool
	At      time.Time
	Detail  string
	Addr    string // the checker's address, "" when unknown
	Reason  string // the checker's last failure reason, kept once probes pass; "" when none is known
}

// Backend is what the API reads and changes: the replicated state's node and the
// zones of the blocks that enable the API, both as they are now (reloads replace them).
type Backend struct {
	Node   func() *control.Node
	Zones  func() []Zone
	Status func(checkID string) []Observation // nil: no observations
	// Services serve the requests signed for another service of OtherServices, by
	// its signing name, once authenticated and paced; nil or missing: refused.
	Services map[string]AuthedHandler
	Lookups
}

// AuthedHandler serves an authenticated request of another service: body is the
// request's whole body, key the access key that signed it.
type AuthedHandler interface {
	ServeAuthed(w http.ResponseWriter, r *http.Request, body []byte, key string)
}

// Server is one listener of the API.
type Server struct {
	be     Backend
	lim    Limits
	verify *verifier
	srv    *http.Server
	ln     net.Listener
	mux    *http.ServeMux

	mu    sync.Mutex
	paces map[string]*rate.Limiter // by access key
	last  *listing                 // the last zone listed, sorted

	throttled atomic.Uint64
	logs      ratelog.Limiter // the listener's refusals, a line per kind per logEvery
}

// logf logs a refusal of kind unless one went out less than logEvery ago; the
// lines held back are counted in the next.
func (s *Server) logf(kind, format string, args ...any) {
	if msg, ok := s.logs.Line(kind, time.Now(), format, args...); ok {
		log.Warning(msg)
	}
}

// Start listens on addr and serves the API with the keys of keyFile.
func Start(addr, keyFile string, lim Limits, be Backend) (*Server, error) {
	k, err := newKeyring(keyFile)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := newServer(k, lim, be, time.Now)
	s.ln = connlimit.New(ln, "route53_api", lim.MaxConns, MaxConnsPerClient, s.logf)
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: lim.Timeout,
		WriteTimeout: lim.Timeout + 5*time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10,
		ConnContext: connlimit.ConnContext}
	go s.srv.Serve(s.ln)
	return s, nil
}

func newServer(k *keyring, lim Limits, be Backend, now func() time.Time) *Server {
	s := &Server{be: be, lim: lim, verify: newVerifier(k, now), paces: map[string]*rate.Limiter{},
		logs: ratelog.Limiter{Window: logEvery, Burst: 1}}
	s.routes()
	return s
}

// Addr returns the listening address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the listener and the connections it holds.
func (s *Server) Close() error { return s.srv.Close() }

// BodyTimeout is the most time a request's body may take to arrive once its
// headers have (they have ReadHeaderTimeout).
const BodyTimeout = 10 * time.Second

// ServeHTTP reads the body (up to the limit, within BodyTimeout), checks the
// signature, then the pace, then dispatches the action. Until the signature
// holds, the connection is one the listener may close to make room, so clients
// that cannot sign, or send slowly, cannot hold the slots signed ones need; the
// pace is decided before anything is remembered of the request, so a throttled
// request sent again (as SDKs do, within the same second and so with the same
// signature) is decided afresh.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	svc := signedService(r)
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(min(BodyTimeout, s.lim.Timeout)))
	body, err := io.ReadAll(io.LimitReader(r.Body, s.lim.MaxBody+1))
	if err != nil {
		w.Header().Set("Connection", "close")
		errInput("reading the request body: "+err.Error()).answer(w, svc)
		return
	}
	if int64(len(body)) > s.lim.MaxBody {
		w.Header().Set("Connection", "close")
		newErr(http.StatusRequestEntityTooLarge, "InvalidInput", "The request body is larger than the limit of this endpoint ("+strconv.FormatInt(s.lim.MaxBody, 10)+" bytes)").answer(w, svc)
		return
	}
	key, signed, e := s.verify.verify(r, body)
	if e != nil {
		e.answer(w, svc)
		return
	}
	defer connlimit.Busy(r.Context())()
	if !s.pace(key).Allow() {
		s.throttled.Add(1)
		newErr(http.StatusBadRequest, "Throttling", "Rate exceeded").answer(w, svc)
		return
	}
	if svc != "route53" {
		h := s.be.Services[svc]
		if h == nil {
			newErr(http.StatusBadRequest, "UnknownOperation", "this endpoint does not serve "+svc+": it needs routing controls (a controls block)").answer(w, svc)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.lim.Timeout)
		defer cancel()
		h.ServeAuthed(w, r.WithContext(ctx), body, key)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	ctx, cancel := context.WithTimeout(r.Context(), s.lim.Timeout)
	defer cancel()
	ctx = context.WithValue(context.WithValue(ctx, keyCtx{}, key), signedCtx{}, signed)
	s.mux.ServeHTTP(w, r.WithContext(ctx))
}

type keyCtx struct{}

func (s *Server) pace(key string) *rate.Limiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.paces[key]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(s.lim.Rate), s.lim.Burst)
		s.paces[key] = l
	}
	return l
}

// routes registers every action; anything else is an unknown action.
func (s *Server) routes() {
	m := http.NewServeMux()
	const v = "/2013-04-01"
	m.HandleFunc("GET "+v+"/hostedzone", s.listHostedZones)
	m.HandleFunc("GET "+v+"/hostedzonecount", s.getHostedZoneCount)
	m.HandleFunc("GET "+v+"/healthcheckcount", s.getHealthCheckCount)
	m.HandleFunc("GET "+v+"/hostedzonesbyname", s.listHostedZonesByName)
	m.HandleFunc("GET "+v+"/hostedzone/{id}", s.getHostedZone)
	m.HandleFunc("GET "+v+"/hostedzone/{id}/rrset", s.listRecordSets)
	m.HandleFunc("GET "+v+"/hostedzone/{id}/rrset/", s.listRecordSets)
	m.HandleFunc("POST "+v+"/hostedzone/{id}/rrset", s.changeRecordSets)
	m.HandleFunc("POST "+v+"/hostedzone/{id}/rrset/", s.changeRecordSets)
	m.HandleFunc("GET "+v+"/change/{id}", s.getChange)
	m.HandleFunc("POST "+v+"/healthcheck", s.createHealthCheck)
	m.HandleFunc("GET "+v+"/healthcheck", s.listHealthChecks)
	m.HandleFunc("GET "+v+"/healthcheck/{id}", s.getHealthCheck)
	m.HandleFunc("POST "+v+"/healthcheck/{id}", s.updateHealthCheck)
	m.HandleFunc("DELETE "+v+"/healthcheck/{id}", s.deleteHealthCheck)
	m.HandleFunc("GET "+v+"/healthcheck/{id}/status", s.getHealthCheckStatus)
	m.HandleFunc("POST "+v+"/tags/{type}/{id}", s.changeTags)
	m.HandleFunc("GET "+v+"/tags/{type}/{id}", s.listTags)
	m.HandleFunc("POST "+v+"/tags/{type}", s.listTagsForResources)
	s.moreRoutes(m, v)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		newErr(http.StatusBadRequest, "InvalidAction", "The action or operation requested is invalid: "+r.Method+" "+r.URL.Path+" is not an action of Route 53 API 2013-04-01 that this endpoint supports").write(w)
	})
	s.mux = m
}

// zone returns the zone the request's {id} names.
func (s *Server) zone(r *http.Request) (Zone, *apiError) {
	id := strings.TrimPrefix(r.PathValue("id"), "/hostedzone/")
	for _, z := range s.allZones() {
		if z.ID() == id {
			return z, nil
		}
	}
	return Zone{}, errNoZone(id)
}

// state returns the API's part of the replicated state, as this member applied
// it; nil when no block enables the API now.
func (s *Server) state() *control.APIState {
	n := s.be.Node()
	if n == nil {
		return &control.APIState{}
	}
	if a := n.API(); a != nil {
		return a
	}
	return &control.APIState{}
}

// propose proposes cmd through the leader. A refusal with a Route 53 code is
// answered with that code; a lost quorum with 503.
func (s *Server) propose(ctx context.Context, cmd *control.APICommand) *apiError {
	n := s.be.Node()
	if n == nil {
		return newErr(http.StatusServiceUnavailable, "ServiceUnavailable", "no block of this server enables the API now")
	}
	if req := signedOf(ctx); req != nil {
		if e := replayRefusal(s.state().Replayed(req.Digest)); e != nil {
			return e
		}
		cmd.Request = req
	}
	err := n.Change(ctx, control.Request{Token: keyOf(ctx), Member: n.Name(), API: cmd})
	var ref *control.Refusal
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ref) && (ref.Code == control.CodeRequestReplayed || ref.Code == control.CodeRequestTooOld):
		return signedRefusal(ref)
	case errors.As(err, &ref) && ref.Code == control.CodeInvalidChangeBatch:
		return errBatch(ref.Messages...)
	case errors.As(err, &ref) && ref.Code != "":
		return newErr(refusalStatus(ref.Code), ref.Code, ref.Reason)
	case errors.Is(err, control.ErrNoQuorum):
		return newErr(http.StatusServiceUnavailable, "ServiceUnavailable", err.Error())
	}
	return newErr(http.StatusInternalServerError, "InternalFailure", err.Error())
}

func refusalStatus(code string) int {
	switch code {
	case control.CodeNoSuchHealthCheck, control.CodeNoSuchHostedZone, control.CodeNoSuchChange:
		return http.StatusNotFound
	case control.CodeHealthCheckExists, control.CodeHealthCheckVersion, control.CodeHealthCheckInUse:
		return http.StatusConflict
	}
	return http.StatusBadRequest
}

func keyOf(ctx context.Context) string { s, _ := ctx.Value(keyCtx{}).(string); return s }

// members are the voters whose answers a change must reach to be INSYNC.
func (s *Server) members() []string {
	n := s.be.Node()
	if n == nil {
		return nil
	}
	var out []string
	for _, v := range n.Status().Voters {
		out = append(out, v.ID)
	}
	slices.Sort(out)
	return out
}
