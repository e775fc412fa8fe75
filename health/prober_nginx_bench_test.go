package health

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// endpointsEnv chooses BenchmarkProber's endpoints for http and tcp: unset or "go",
// this test binary's own responders (responderProcess); "nginx", an nginx process
// (Debian's nginx-light: one process, no workers, no logs) answering 200 "OK" on
// each port and closing, the same exchange in C: where the Go responders cannot
// keep up on one core, at 10,000 connections a second, nginx can.
const endpointsEnv = "HEALTHROUTE_BENCH_ENDPOINTS"

// benchEndpoints starts n endpoints of the kind endpointsEnv names, on CPU cpu,
// and returns their addresses and the id of their process. https always uses
// this binary's responders (their certificate is made in process).
func benchEndpoints(b *testing.B, n int, cpu string, useTLS bool) ([]string, int) {
	switch kind := os.Getenv(endpointsEnv); {
	case kind == "nginx" && !useTLS:
		return nginxEndpoints(b, n, cpu)
	case kind == "" || kind == "go" || kind == "nginx":
		return responderProcessPID(b, n, cpu, useTLS)
	default:
		b.Fatalf("%s=%q: expected go or nginx", endpointsEnv, kind)
		return nil, 0
	}
}

// nginxEndpoints runs nginx (from PATH or /usr/sbin) in the foreground as a single
// process serving n loopback ports, pinned to cpu by taskset when there is one,
// and stops it (by its process id) when b ends.
func nginxEndpoints(b *testing.B, n int, cpu string) ([]string, int) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			b.Fatalf("%s=nginx: no nginx (Debian: apt-get install nginx-light): %v", endpointsEnv, err)
		}
	}
	// Ports below the ephemeral range: at 10,000 connections a second the probes'
	// source ports would soon take a port found free inside it.
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", coretest.FreePort(b))
	}
	dir := b.TempDir()
	var conf strings.Builder
	fmt.Fprintf(&conf, `daemon off;
master_process off;
worker_processes 1;
error_log %s/error.log warn;
pid %s/nginx.pid;
events { worker_connections 16384; multi_accept on; }
http {
	access_log off;
	keepalive_timeout 0;
	client_body_temp_path %[2]s; proxy_temp_path %[2]s; fastcgi_temp_path %[2]s;
	uwsgi_temp_path %[2]s; scgi_temp_path %[2]s;
	server {
`, dir, dir)
	for _, a := range addrs {
		fmt.Fprintf(&conf, "\t\tlisten %s backlog=4096;\n", a)
	}
	conf.WriteString("\t\tlocation / { default_type text/plain; return 200 \"OK\"; }\n\t}\n}\n")
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	args := []string{bin, "-c", path, "-e", filepath.Join(dir, "error.log")}
	if ts, err := exec.LookPath("taskset"); err == nil && cpu != "" {
		args = append([]string{ts, "-c", cpu}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT) // nginx's graceful stop
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	// Up when every port accepts.
	coretest.WaitUntil(b, 10*time.Second, "nginx accepts on every port", func() bool {
		select {
		case <-exited:
			b.Fatalf("nginx exited: %s", out.String())
		default:
		}
		for _, a := range addrs {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err != nil {
				return false
			}
			c.Close()
		}
		return true
	}, out.String)
	return addrs, cmd.Process.Pid
}
