package test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// ctlToken is the bearer token of the control tests' token file, named ops.
const ctlToken = "0123456789abcdef0123456789abcdef"

// ctlMember is one CoreDNS process of a controls test: its ports, its data
// directory (kept across restarts) and the Corefile it runs.
type ctlMember struct {
	name                  string
	dns, api, gossip, ctl int
	dataDir, corefile     string
	r53                   string // the Route 53 API's address, "" without one
	srv                   *coretest.Server
}

// ctlFleet is a fleet of CoreDNS processes sharing routing controls east and west
// (the primary answers while east is on), with the rule one-region: at least 1 of
// {east, west} on. With proxied, every member reaches the others' control ports
// through a proxy per direction, which cut and heal (the partition).
type ctlFleet struct {
	t       *testing.T
	ms      []*ctlMember
	proxies map[[2]int]*tcpProxy // [from, to]
}

func newCtlFleet(t *testing.T, n int, proxied bool) *ctlFleet {
	t.Helper()
	coretest.Binary(t) // build before timing anything
	dir := t.TempDir()
	key := make([]byte, 32)
	rand.Read(key)
	keyFile := filepath.Join(dir, "gossip.key")
	tokenFile := filepath.Join(dir, "api.token")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("ops "+ctlToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &ctlFleet{t: t, proxies: map[[2]int]*tcpProxy{}}
	for i := range n {
		f.ms = append(f.ms, &ctlMember{name: fmt.Sprintf("dns-%c", 'a'+i), dns: coretest.FreePort(t), api: coretest.FreePort(t),
			gossip: coretest.FreePort(t), ctl: coretest.FreePort(t), dataDir: filepath.Join(dir, fmt.Sprintf("state-%c", 'a'+i))})
	}
	for i, m := range f.ms {
		var join, voters []string
		for j, o := range f.ms {
			addr := fmt.Sprintf("127.0.0.1:%d", o.ctl)
			if j != i {
				join = append(join, fmt.Sprintf("127.0.0.1:%d", o.gossip))
				if proxied {
					p := newTCPProxy(t, addr)
					f.proxies[[2]int{i, j}] = p
					addr = p.addr()
				}
			}
			voters = append(voters, o.name+"="+addr)
		}
		m.corefile = fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d {
			token_file %s
		}
		fleet {
			bind 127.0.0.1:%d
			join %s
			name %s
			key_file %s
		}
		controls {
			bind 127.0.0.1:%d
			data_dir %s
			voters %s
			assertion one-region 1 east west
		}
		check east control
		check west control
		record www.example.org. failover {
			primary   A 192.0.2.1 check east
			secondary A 198.51.100.1 check west
		}
	}
}`, m.dns, m.api, tokenFile, m.gossip, strings.Join(join, " "), m.name, keyFile, m.ctl, m.dataDir, strings.Join(voters, " "))
	}
	return f
}

const (
	ctlPrimary   = "192.0.2.1"
	ctlSecondary = "198.51.100.1"
)

func (f *ctlFleet) start(i int) {
	f.t.Helper()
	// GOTRACEBACK=all: a member found stuck is ended with SIGABRT (goroutines),
	// which then prints every goroutine.
	f.ms[i].srv = coretest.StartWith(f.t, f.ms[i].corefile, f.ms[i].dns, "www.example.org", coretest.Options{Env: []string{"GOTRACEBACK=all"}})
}

// kill SIGKILLs member i and waits until the process is gone.
func (f *ctlFleet) kill(i int) {
	f.t.Helper()
	p := f.ms[i].srv.Cmd.Process
	if err := p.Kill(); err != nil {
		f.t.Fatal(err)
	}
	waitUntil(f.t, 5*time.Second, f.ms[i].name+" exits", func() bool { return processGone(p.Pid) }, func() string { return "" })
}

// processGone reports whether process pid has exited and been reaped.
func processGone(pid int) bool { return syscall.Kill(pid, 0) != nil }

// answer is member i's first A record for www.example.org.
func (f *ctlFleet) answer(i int) string {
	f.t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("www.example.org.", dns.TypeA)
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, f.ms[i].srv.Addr)
	if err != nil {
		f.t.Fatalf("%s: query www.example.org A: %v\nits output:\n%s", f.ms[i].name, err, f.ms[i].srv.Output())
	}
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			return a.A.String()
		}
	}
	return ""
}

// allAnswer reports whether every running member answers want.
func (f *ctlFleet) allAnswer(want string, members ...int) bool {
	for _, i := range members {
		if f.answer(i) != want {
			return false
		}
	}
	return true
}

// ctlClient is the controls tests' HTTP client: short, so a request to a stopped
// member fails fast.
var ctlClient = &http.Client{Timeout: 8 * time.Second}

// post sends a change through member i's API and returns the status and body; a
// transport error is status 0 with the error as body.
func (f *ctlFleet) post(i int, path, body string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d%s", f.ms[i].api, path), strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ctlToken)
	return roundTrip(req)
}

// roundTrip sends req and returns the status and body; a transport error is
// status 0 with the error as body.
func roundTrip(req *http.Request) (int, string) {
	resp, err := ctlClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// ctlView is what the tests read of GET /v1/controls.
type ctlView struct {
	Raft struct {
		State     string `json:"raft_state"`
		Leader    string `json:"leader"`
		CanChange bool   `json:"can_change"`
		Commit    uint64 `json:"commit_index"`
		Applied   uint64 `json:"applied_index"`
	} `json:"raft"`
	Controls []struct {
		Name string `json:"name"`
		On   bool   `json:"on"`
	} `json:"controls"`
	Audit []struct {
		Token, Member, Refused, Rule string
		BreakGlass                   []string `json:"break_glass"`
	} `json:"audit"`
}

func (v ctlView) on(name string) bool {
	for _, c := range v.Controls {
		if c.Name == name {
			return c.On
		}
	}
	return false
}

// view reads member i's GET /v1/controls (query: "" or "?consistent=1").
func (f *ctlFleet) view(i int, query string) (ctlView, error) {
	var v ctlView
	resp, err := ctlClient.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/controls%s", f.ms[i].api, query))
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return v, fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	return v, json.NewDecoder(resp.Body).Decode(&v)
}

// ready waits until every given member can accept changes (a leader is elected
// and known).
func (f *ctlFleet) ready(within time.Duration, members ...int) {
	f.t.Helper()
	waitUntil(f.t, within, "every member accepts changes", func() bool {
		for _, i := range members {
			if v, err := f.view(i, ""); err != nil || !v.Raft.CanChange {
				return false
			}
		}
		return true
	}, f.diag)
}

// diag describes every member's view, for failures.
func (f *ctlFleet) diag() string {
	var b strings.Builder
	for i, m := range f.ms {
		v, err := f.view(i, "")
		fmt.Fprintf(&b, "%s: %+v %v\n", m.name, v.Raft, err)
	}
	return b.String()
}

// tcpProxy forwards connections to target until cut: then it closes what it
// carries and every connection it accepts, as a network partition would.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.loop()
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) loop() {
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		} else if err != nil {
			continue
		}
		go p.pipe(c)
	}
}

// track adds c to the carried connections, false (and closes c) when cut.
func (p *tcpProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *tcpProxy) pipe(in net.Conn) {
	if !p.track(in) {
		return
	}
	out, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		in.Close()
		return
	}
	if !p.track(out) {
		in.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(out, in); done <- struct{}{} }()
	go func() { io.Copy(in, out); done <- struct{}{} }()
	<-done
	in.Close()
	out.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}

// setCut cuts (closing every carried connection) or heals the link.
func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

// partition cuts (or heals) the links between member i and every other member,
// both ways.
func (f *ctlFleet) partition(i int, cut bool) {
	for k, p := range f.proxies {
		if k[0] == i || k[1] == i {
			p.setCut(cut)
		}
	}
}

// apiErrorText is the error of an API reply's JSON body, else the body.
func apiErrorText(body string) string {
	var v struct{ Error string }
	if json.Unmarshal([]byte(body), &v) == nil && v.Error != "" {
		return v.Error
	}
	return body
}
