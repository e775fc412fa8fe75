package operator

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/internal/connlimit"
	"github.com/healthroute/healthroute/view"
)

// server is one API listener: the status page, the JSON views, explain and
// overrides, for the blocks that declared its address. It reads them at request
// time, so it always shows the running configuration, across reloads; what it
// shows is built once per state of those blocks (see views).
type server struct {
	op    *Operator
	scope string // the listener's address: it shows the blocks that declared it; "" every block
	srv   *http.Server
	done  chan struct{}
	gate  gate
	pace  pacer
	logs  *errorLog

	mu        sync.Mutex
	tokenFile string

	cacheMu sync.Mutex
	cache   *views
}

func newServer(op *Operator, scope, tokenFile string) *server {
	return &server{op: op, scope: scope, tokenFile: tokenFile,
		gate: make(gate, maxExpensive), pace: newPacer(), logs: newErrorLog(logEvery)}
}

// listen listens on addr and serves until stop, within the limits of limits.go.
func listen(addr, tokenFile string, op *Operator) (*server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := newServer(op, addr, tokenFile)
	s.done = make(chan struct{})
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes - headerSlack,
		ErrorLog:    stdlog.New(s.logs, "", 0),
		ConnContext: connlimit.ConnContext}
	go func() {
		defer close(s.done)
		err := s.srv.Serve(connlimit.New(ln, "api", maxConns, maxConnsPerClient, s.logs.Errorf))
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Errorf("api %s: %v", addr, err)
		}
	}()
	log.Infof("api listening on %s", ln.Addr())
	return s, nil
}

// Handler returns the API's routes over every running block, for serving on a
// listener of the caller's; tokenFile authorises overrides ("": refused), of any
// block's checks.
func (o *Operator) Handler(tokenFile string) http.Handler {
	return newServer(o, "", tokenFile).handler()
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.statusPage)
	mux.HandleFunc("GET /v1/checks", s.getChecks)
	mux.HandleFunc("GET /v1/checks/{name}/history", s.getHistory)
	mux.HandleFunc("GET /v1/records", s.getRecords)
	mux.HandleFunc("GET /v1/explain", s.getExplain)
	mux.HandleFunc("POST /v1/checks/{name}/override", s.postOverride)
	mux.HandleFunc("GET /v1/controls", s.getControls)
	mux.HandleFunc("POST /v1/controls", s.postControls)
	mux.HandleFunc("POST /v1/controls/{name}", s.postControl)
	return connlimit.Answering(http.MaxBytesHandler(s.pace.paced(mux), maxBodyBytes))
}

func (s *server) setTokenFile(path string) {
	s.mu.Lock()
	s.tokenFile = path
	s.mu.Unlock()
}

func (s *server) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	<-s.done
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

func (s *server) getChecks(w http.ResponseWriter, r *http.Request) {
	v := s.current()
	checks, _ := v.json()
	s.writeCached(w, r, v.etag, checks)
}

func (s *server) getRecords(w http.ResponseWriter, r *http.Request) {
	v := s.current()
	_, records := v.json()
	s.writeCached(w, r, v.etag, records)
}

// writeCached writes a cached JSON body, or 304 when the client has it.
func (s *server) writeCached(w http.ResponseWriter, r *http.Request, etag string, body []byte) {
	if notModified(w, r, etag) {
		return
	}
	if !s.pace.wait(r.Context(), bodyUnits(len(body))) {
		busy(w, errBusy)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// getExplain answers GET /v1/explain?name=N&type=T&client=IP[/PREFIX] with optional
// country, continent, subdivision, lat and lon (the geoip location to assume).
func (s *server) getExplain(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	name := qv.Get("name")
	if _, ok := dns.IsDomainName(name); !ok || name == "" {
		apiError(w, http.StatusBadRequest, "name: expected a domain name")
		return
	}
	name = strings.ToLower(dns.Fqdn(name))
	qtype := dns.TypeA
	if t := qv.Get("type"); t != "" {
		var ok bool
		if qtype, ok = dns.StringToType[strings.ToUpper(t)]; !ok {
			apiError(w, http.StatusBadRequest, "type: unknown record type '"+t+"'")
			return
		}
		if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR { // as ServeDNS: never answered here
			apiError(w, http.StatusBadRequest, "type: "+dns.TypeToString[qtype]+" is not answered by healthroute: zone transfers go to the next plugin")
			return
		}
	}
	client, err := parseClient(qv.Get("client"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "client: "+err.Error())
		return
	}
	q := view.Question{Name: name, Type: qtype, Client: client, Country: strings.ToUpper(qv.Get("country")),
		Continent: strings.ToUpper(qv.Get("continent")), Subdivisions: strings.ToUpper(qv.Get("subdivision"))}
	if qv.Get("lat") != "" || qv.Get("lon") != "" {
		lat, err1 := strconv.ParseFloat(qv.Get("lat"), 64)
		lon, err2 := strconv.ParseFloat(qv.Get("lon"), 64)
		if err1 != nil || err2 != nil || !view.ValidCoords(lat, lon) {
			apiError(w, http.StatusBadRequest, "lat, lon: expected decimal degrees, latitude -90..90 and longitude -180..180")
			return
		}
		q.Lat, q.Lon, q.HasCoords = lat, lon, true
	}
	if err := s.gate.enter(r.Context()); err != nil {
		busy(w, err)
		return
	}
	defer s.gate.leave()
	var block Block // the block with the longest zone that holds name
	best := ""
	for _, b := range s.op.blocksOf(s.scope) {
		if z := plugin.Zones(b.Zones()).Matches(name); len(z) > len(best) {
			block, best = b, z
		}
	}
	if block == nil {
		apiError(w, http.StatusNotFound, "no healthroute block serves "+name)
		return
	}
	writeJSON(w, http.StatusOK, block.Explain(q))
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
		a, bits := p.Addr(), p.Bits()
		if a.Is4In6() && bits >= 96 { // an IPv4 client written as ::ffff:a.b.c.d, as DNS reads ECS
			a, bits = a.Unmap(), bits-96
		}
		return netip.PrefixFrom(a, bits).Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, errors.New("expected IP or IP/PREFIX")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// MinTokenLen is the shortest bearer token accepted: setup refuses a shorter one, and
// an override request finding one (a file emptied or rewritten since) is refused.
const MinTokenLen = 16

// maxTokenFile bounds what ReadToken reads: a token is a line, not a file's worth.
const maxTokenFile = 4 << 10

// ReadToken returns the bearer token in the file at path, trimmed of white space. A
// file over 4 KiB is refused unread past that, so a wrong path (a log, a device)
// cannot make every override request read without bound.
func ReadToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("%s is over %d bytes, expected one token", path, maxTokenFile)
	}
	return strings.TrimSpace(string(b)), nil
}

// authorize checks the request's bearer token against the token file and returns
// the matching token's name; otherwise it answers 401 or 403 (what names the
// request in the log).
func (s *server) authorize(w http.ResponseWriter, r *http.Request, what string) (string, bool) {
	s.mu.Lock()
	path := s.tokenFile
	s.mu.Unlock()
	if path == "" {
		apiError(w, http.StatusForbidden, "overrides are disabled: no token_file is configured")
		return "", false
	}
	tokens, err := ReadTokens(path)
	if err != nil {
		s.logs.Errorf("token", "api: token_file: %v", err)
		apiError(w, http.StatusForbidden, "overrides are disabled: the token file cannot be read")
		return "", false
	}
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ") // the scheme is case-insensitive (RFC 7235)
	got = strings.TrimSpace(got)
	name, short := "", 0
	for _, t := range tokens {
		if n := len(t.Value); n < MinTokenLen { // emptied or shortened since startup: never matches
			short = n
			continue
		}
		if ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(got), []byte(t.Value)) == 1 {
			name = t.Name
		}
	}
	if name == "" && short > 0 || len(tokens) == 0 {
		apiError(w, http.StatusForbidden, fmt.Sprintf("overrides are disabled: the token file holds %d characters, expected at least %d", short, MinTokenLen))
		return "", false
	}
	if name == "" {
		s.logs.Errorf("auth", "api: refused %s from %s: no valid bearer token", what, r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="healthroute"`)
		apiError(w, http.StatusUnauthorized, "a valid bearer token is required")
		return "", false
	}
	return name, true
}

// Token is one named bearer token of a token file.
type Token struct {
	Name  string // recorded with the changes it authorises
	Value string
}

// ReadTokens returns the tokens in the file at path: one per line, either TOKEN
// alone (named "token"; a file of one such line is the original format) or NAME
// TOKEN. Blank lines and lines starting with # are skipped.
func ReadTokens(path string) ([]Token, error) {
	text, err := ReadToken(path)
	if err != nil {
		return nil, err
	}
	var out []Token
	holder := map[string]string{} // token -> its name
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		var t Token
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
			continue
		case len(f) == 1:
			t = Token{Name: "token", Value: f[0]}
		case len(f) == 2:
			t = Token{Name: f[0], Value: f[1]}
		default:
			return nil, fmt.Errorf("%s: a line of %d fields, expected TOKEN or NAME TOKEN", path, len(f))
		}
		// The audit names a change by its token's holder: one token under two names
		// would put one holder's changes in the other's name.
		if other, ok := holder[t.Value]; ok && other != t.Name {
			return nil, fmt.Errorf("%s: the same token is given under the names %s and %s; give each name a token of its own", path, other, t.Name)
		}
		holder[t.Value] = t.Name
		out = append(out, t)
	}
	return out, nil
}

// postOverride handles POST /v1/checks/NAME/override with healthy, unhealthy or none
// (as the body, or the form field state), authorised by the bearer token. With
// routing controls the override goes into the replicated state, through the leader.
func (s *server) postOverride(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	token, ok := s.authorize(w, r, fmt.Sprintf("an override of %q", name))
	if !ok {
		return
	}
	state, err := overrideState(w, r)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
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
	if cs := s.op.controls(); cs != nil {
		s.change(w, r, cs, control.Request{Token: token, Member: cs.Member, Reason: r.URL.Query().Get("reason"), Override: map[string]string{name: state}})
		return
	}
	if err := s.op.override(s.scope, name, v); err != nil {
		apiError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"check": name, "override": state})
}

// overrideState reads the state an override request asks for: the form field state
// (in the query or a form body), else the whole body as text. curl --data sends a
// bare word with a form content type, so a form body without a state field is read
// as text too.
func overrideState(w http.ResponseWriter, r *http.Request) (string, error) {
	if v := r.URL.Query().Get("state"); v != "" {
		return v, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1024))
	if err != nil {
		return "", errors.New("body: at most 1024 bytes")
	}
	text := strings.TrimSpace(string(body))
	if form, err := url.ParseQuery(text); err == nil && form.Has("state") {
		return form.Get("state"), nil
	}
	return text, nil
}
