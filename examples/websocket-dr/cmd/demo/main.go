// Command demo runs the WebSocket disaster-recovery example on this machine and
// prints the failover timeline: it builds CoreDNS with healthroute and the region
// service, starts DNS (examples/websocket-dr/Corefile) and both regions, connects a
// few clients that keep writing to their sessions, kills the primary, waits until
// every client has resumed in the standby, then restarts the primary and waits for
// DNS to fail back. Everything listens on loopback; every process is stopped on exit.
//
//	go run ./examples/websocket-dr/cmd/demo [-clients 5]
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/healthroute/healthroute/examples/websocket-dr"
	"github.com/healthroute/healthroute/examples/websocket-dr/client"
	"github.com/healthroute/healthroute/examples/websocket-dr/internal/lab"
)

func main() {
	clients := flag.Int("clients", 5, "clients to run")
	heartbeat := flag.Duration("heartbeat", time.Second, "client heartbeat interval (the library's default is 30s)")
	replicate := flag.Duration("replicate", 500*time.Millisecond, "replication flush interval")
	writeEvery := flag.Duration("write", 200*time.Millisecond, "each client writes to its session this often")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *clients, *heartbeat, *replicate, *writeEvery); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, clients int, heartbeat, replicate, writeEvery time.Duration) error {
	dir, err := os.MkdirTemp("", "websocket-dr-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logf, err := os.Create(filepath.Join(dir, "processes.log"))
	if err != nil {
		return err
	}
	defer logf.Close()

	say("building CoreDNS with healthroute and the region service")
	coredns, regionBin := filepath.Join(dir, "coredns"), filepath.Join(dir, "region")
	if err := lab.Build("./cmd/coredns", coredns); err != nil {
		return err
	}
	if err := lab.Build("./examples/websocket-dr/cmd/region", regionBin); err != nil {
		return err
	}
	port := websocketdr.ServicePort
	var procs []*lab.Proc
	defer func() { // stop every process started, newest first, by PID
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop()
		}
	}()
	startRegion := func(name string, ip netip.Addr) (*lab.Proc, error) {
		p, err := lab.StartRegion(regionBin, name, ip, port, replicate, logf)
		if err == nil {
			procs = append(procs, p)
			say("region %s serving on %s:%d (pid %d)", name, ip, port, p.PID())
		}
		return p, err
	}
	primary, err := startRegion("primary", lab.PrimaryIP)
	if err != nil {
		return err
	}
	if _, err := startRegion("standby", lab.StandbyIP); err != nil {
		return err
	}
	corefile := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(websocketdr.Corefile), 0o644); err != nil {
		return err
	}
	dns, err := lab.Start("coredns", logf, coredns, "-conf", corefile)
	if err != nil {
		return err
	}
	procs = append(procs, dns)
	server := fmt.Sprintf("127.0.0.1:%d", websocketdr.DNSPort)
	if _, err := lab.WaitDNS(ctx, server, websocketdr.Name, lab.PrimaryIP, 30*time.Second); err != nil {
		return fmt.Errorf("%v (process output in %s)", err, logf.Name())
	}
	say("healthroute on %s answers %s %s (pid %d)", server, websocketdr.Name, lab.PrimaryIP, dns.PID())

	fleet := lab.StartFleet(ctx, clients, client.Options{
		Name: websocketdr.Name, DNS: server, Port: port, Heartbeat: heartbeat, Handshake: time.Second,
		Backoff: client.Backoff{Base: 250 * time.Millisecond, Cap: 2 * time.Second, Attempts: 30},
	}, writeEvery)
	defer fleet.Stop()
	if err := fleet.Wait(20*time.Second, "clients connected", lab.AllIn("primary", clients, time.Time{})); err != nil {
		return err
	}
	say("%d clients connected to the primary, each writing every %s", clients, writeEvery)
	if err := fleet.WaitWrites(10, 30*time.Second); err != nil {
		return err
	}

	fault := time.Now()
	primary.Kill()
	say("primary killed (SIGKILL)")
	switched, err := lab.WaitDNS(ctx, server, websocketdr.Name, lab.StandbyIP, 15*time.Second)
	if err != nil {
		return err
	}
	say("healthroute answers %s %s", websocketdr.Name, lab.StandbyIP)
	if err := fleet.Wait(15*time.Second, "clients resumed in the standby", lab.AllIn("standby", clients, fault)); err != nil {
		return err
	}
	say("every client resumed its session in the standby\n\nfailover timeline (check interval 1s x failure_threshold 2, ttl 1, replication every %s):\n%s", replicate, lab.Measure(fleet, fault, switched, "standby"))
	for _, e := range fleet.Events() {
		if e.State == client.Connected && e.Region == "standby" && !e.Time.Before(fault) {
			fmt.Printf("  %s resumed at version %d in the standby, %d acknowledged writes lost\n", e.User, e.Version, e.Lost)
		}
	}

	back := time.Now()
	if _, err := startRegion("primary", lab.PrimaryIP); err != nil {
		return err
	}
	failback, err := lab.WaitDNS(ctx, server, websocketdr.Name, lab.PrimaryIP, 15*time.Second)
	if err != nil {
		return err
	}
	say("primary back: healthroute answers %s again %d ms after the restart (clients stay on the standby until they reconnect)",
		lab.PrimaryIP, failback.Sub(back).Milliseconds())
	return nil
}

var start = time.Now()

func say(format string, args ...any) {
	fmt.Printf("[%7.3fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}
