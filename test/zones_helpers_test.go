package test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// zonesAsk sends one question to addr over UDP, with an ECS option when subnet is
// set ("192.0.2.0/24"), and returns the reply.
func zonesAsk(t *testing.T, addr, name string, qtype uint16, subnet string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, false)
	if subnet != "" {
		ip, n, err := net.ParseCIDR(subnet)
		if err != nil {
			t.Fatal(err)
		}
		ones, _ := n.Mask.Size()
		family, a := uint16(1), ip.To4()
		if a == nil {
			family, a = 2, ip
		}
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{
			Code: dns.EDNS0SUBNET, Family: family, SourceNetmask: uint8(ones), Address: a})
	}
	return zonesExchange(t, addr, m)
}

func zonesExchange(t *testing.T, addr string, m *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s at %s: %v", m.Question[0].Name, dns.TypeToString[m.Question[0].Qtype], addr, err)
	}
	return r
}

// zonesScope returns the ECS scope of a reply, -1 without an ECS option.
func zonesScope(m *dns.Msg) int {
	if o := m.IsEdns0(); o != nil {
		for _, opt := range o.Option {
			if e, ok := opt.(*dns.EDNS0_SUBNET); ok {
				return int(e.SourceScope)
			}
		}
	}
	return -1
}

// zonesSection renders a section one record a line, tabs as spaces, TTLs kept.
func zonesSection(rrs []dns.RR) string {
	var b strings.Builder
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		b.WriteString(strings.Join(strings.Fields(rr.String()), " ") + "\n")
	}
	return b.String()
}

// zonesAddrs returns the A and AAAA values of an answer section, in order.
func zonesAddrs(m *dns.Msg) string {
	var out []string
	for _, rr := range m.Answer {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.AAAA:
			out = append(out, v.AAAA.String())
		}
	}
	return strings.Join(out, ",")
}

// zonesOverride forces a check's status through the HTTP API.
func zonesOverride(t *testing.T, api, token, check, state string) {
	t.Helper()
	if code, body := httpDo(t, http.MethodPost, "http://"+api+"/v1/checks/"+check+"/override", token, state); code != http.StatusOK {
		t.Fatalf("override %s %s: %d %s", check, state, code, body)
	}
}

// zonesSwitchable starts CoreDNS with an API and a disabled (so healthy) check sw that
// zonesOverride turns, and records (healthroute block lines); extra goes into the
// server block. It returns the server, the API address and its token.
func zonesSwitchable(t *testing.T, extra, records string) (*coretest.Server, string, string) {
	t.Helper()
	const token = "zones-test-token-0123456789"
	tokenFile := writeToken(t, t.TempDir(), token)
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	api := fmt.Sprintf("127.0.0.1:%d", apiPort)
	s := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	%s
	healthroute {
		ttl 300
		api %s {
			token_file %s
		}
		check sw tcp 127.0.0.1:1 {
			disabled
		}
%s
	}
}`, port, extra, api, tokenFile, records), port, "example.org")
	return s, api, token
}

// zonesProc is a resolver process a test started; it is stopped by PID.
type zonesProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan error
}

func (p *zonesProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *zonesProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startProc runs bin in dir and waits up to within until ready reports true (tried
// every pace); the process is stopped by PID (SIGTERM, then SIGKILL after 10 s) when
// the test ends, and its output is kept for failure messages. what names what ready
// waits for.
func startProc(t *testing.T, dir, bin, what string, within, pace time.Duration, ready func() bool, args ...string) *zonesProc {
	t.Helper()
	path, err := exec.LookPath(bin)
	if err != nil {
		t.Fatalf("%s is not installed (scripts/test-deps installs it): %v", bin, err)
	}
	p := &zonesProc{cmd: exec.Command(path, args...), done: make(chan error, 1)}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	deadline := time.Now().Add(within)
	tick := time.NewTicker(pace) // paces tries against a port not yet open
	defer tick.Stop()
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s exited before %s: %v\n%s", bin, what, err, p.output())
		default:
		}
		if ready() {
			return p
		}
		<-tick.C
	}
	t.Fatalf("%s: not %s within %s\n%s", bin, what, within, p.output())
	return nil
}

// zonesStartResolver runs a resolver binary in dir and waits (up to 20 s) until it
// answers probe on addr; the process is stopped by PID when the test ends.
func zonesStartResolver(t *testing.T, addr, probe, dir, bin string, args ...string) *zonesProc {
	t.Helper()
	c := &dns.Client{Timeout: 300 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(probe), dns.TypeA)
	answers := func() bool {
		r, _, err := c.Exchange(m, addr)
		return err == nil && r.Rcode != dns.RcodeServerFailure
	}
	return startProc(t, dir, bin, "answering "+probe+" on "+addr, 20*time.Second, 50*time.Millisecond, answers, args...)
}

// zonesUnbound starts Unbound on a loopback port with its own configuration: zone is
// a stub zone served by the CoreDNS at auth; modules and extra are added to the
// server clause. It returns Unbound's address.
func zonesUnbound(t *testing.T, auth *coretest.Server, zone, modules, extra string) string {
	t.Helper()
	dir := t.TempDir()
	port := coretest.FreePort(t)
	conf := fmt.Sprintf(`server:
	interface: 127.0.0.1
	port: %d
	do-ip6: no
	do-daemonize: no
	use-syslog: no
	logfile: ""
	verbosity: 1
	username: ""
	chroot: ""
	directory: "%s"
	pidfile: "%s/unbound.pid"
	num-threads: 1
	so-reuseport: no
	access-control: 127.0.0.0/8 allow
	do-not-query-localhost: no
	module-config: "%s"
%s
stub-zone:
	name: "%s"
	stub-addr: %s
remote-control:
	control-enable: no
`, port, dir, dir, modules, extra, zone, strings.Replace(auth.Addr, ":", "@", 1))
	path := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	zonesStartResolver(t, addr, zone, dir, "unbound", "-d", "-c", path)
	return addr
}
