// Package lab runs the WebSocket disaster-recovery example on loopback: it builds
// and starts the processes, runs a fleet of clients, watches DNS and turns what it
// saw into a failover timeline. The end-to-end test and cmd/demo share it.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// The two regions' loopback addresses; they share one port.
var (
	PrimaryIP = netip.MustParseAddr("127.0.0.1")
	StandbyIP = netip.MustParseAddr("127.0.0.2")
)

// ModuleRoot returns the directory holding this module's go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the healthroute module")
	}
	return filepath.Dir(mod), nil
}

// Build runs "go build -o out pkg" in the module root.
func Build(pkg, out string) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// FreeServicePort returns a TCP port that was free on both region addresses a moment ago.
func FreeServicePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", net.JoinHostPort(PrimaryIP.String(), "0"))
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l2, err := net.Listen("tcp", fmt.Sprintf("%s:%d", StandbyIP, port))
		l.Close()
		if err == nil {
			l2.Close()
			return port, nil
		}
	}
	return 0, errors.New("no port free on both region addresses in 20 tries")
}

// Proc is a started process, stopped by its PID.
type Proc struct {
	Name   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs bin with args, its output going to out.
func Start(name string, out io.Writer, bin string, args ...string) (*Proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // the exit status of a process we stop or kill says nothing
		close(p.exited)
	}()
	return p, nil
}

// PID returns the process ID.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Kill crashes the process (SIGKILL: no shutdown, no last flush) and waits for it.
func (p *Proc) Kill() {
	_ = syscall.Kill(p.PID(), syscall.SIGKILL)
	<-p.exited
}

// Stop asks the process to end (SIGTERM), kills it after 5s, and waits for it.
// Stopping a stopped process does nothing.
func (p *Proc) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(p.PID(), syscall.SIGTERM)
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		p.Kill()
	}
}

// StartRegion starts the region binary bin as name on ip:port, replicating to the
// other region every replicate, and waits (up to 10s) until it serves /healthz.
func StartRegion(bin, name string, ip netip.Addr, port int, replicate time.Duration, out io.Writer) (*Proc, error) {
	peer := StandbyIP
	if ip == StandbyIP {
		peer = PrimaryIP
	}
	addr := fmt.Sprintf("%s:%d", ip, port)
	p, err := Start("region "+name, out, bin, "-name", name, "-listen", addr,
		"-peer", fmt.Sprintf("http://%s:%d", peer, port), "-replicate", replicate.String())
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 200 * time.Millisecond}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond) // paces tries against a refused port
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if resp, err := hc.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.Exited():
			return nil, fmt.Errorf("region %s exited before serving", name)
		case <-tick.C:
		}
	}
	p.Stop()
	return nil, fmt.Errorf("region %s did not serve on %s within 10s", name, addr)
}

// Lookup asks server for name's A records.
func Lookup(server, name string) ([]netip.Addr, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	c := &dns.Client{Timeout: time.Second}
	in, _, err := c.Exchange(m, server)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	for _, rr := range in.Answer {
		if a, ok := rr.(*dns.A); ok {
			if ip, ok := netip.AddrFromSlice(a.A.To4()); ok {
				ips = append(ips, ip)
			}
		}
	}
	return ips, nil
}

// WaitDNS polls server every 50ms until name answers exactly want, and returns when it
// first did. It gives up after within.
func WaitDNS(ctx context.Context, server, name string, want netip.Addr, within time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last []netip.Addr
	var lastErr error
	for {
		ips, err := Lookup(server, name)
		if err == nil && len(ips) == 1 && ips[0] == want {
			return time.Now(), nil
		}
		last, lastErr = ips, err
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%s did not answer %s within %s (last answer %v, error %v)", name, want, within, last, lastErr)
		case <-tick.C:
		}
	}
}
