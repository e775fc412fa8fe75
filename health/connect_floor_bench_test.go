//go:build linux

package health

import (
	"bytes"
	"net/netip"
	"os"
	"syscall"
	"testing"
)

// BenchmarkConnectFloor is the kernel's part of a probe on this machine, the floor
// under BenchmarkProber's CPU per probe: blocking system calls from one goroutine,
// no poller, no scheduler, against the same responder process (pinned to the core
// in HEALTHROUTE_BENCH_RESPONDER_CPU, default 1; run the benchmark pinned to
// another). connect: socket, connect and close, a tcp probe's system calls. http:
// the same with the request written and the response read to the end of its
// head, an http probe's; http-rst: closed with SO_LINGER 0, a reset in place of
// the FIN, which probes do not do. It reports this process's CPU time (user and system) per connection.
//
//	taskset -c 0 go test -run '^$' -bench ConnectFloor -benchtime 30000x ./health/
func BenchmarkConnectFloor(b *testing.B) {
	cpu := os.Getenv("HEALTHROUTE_BENCH_RESPONDER_CPU")
	if cpu == "" {
		cpu = "1"
	}
	addrs := responderProcess(b, 64, cpu, false)
	eps := make([]syscall.SockaddrInet4, len(addrs))
	for i, a := range addrs {
		ap := netip.MustParseAddrPort(a)
		eps[i] = syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	req := []byte("GET /health HTTP/1.1\r\nHost: x\r\nUser-Agent: " + UserAgent("") + "\r\nAccept: */*\r\nConnection: close\r\n\r\n")
	for _, v := range []struct {
		name          string
		exchange, rst bool
	}{{"connect", false, false}, {"http", true, false}, {"http-rst", true, true}} {
		exchange := v.exchange
		b.Run(v.name, func(b *testing.B) {
			buf := make([]byte, 4096)
			cpu0 := cpuTime()
			for i := range b.N {
				fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					b.Fatal(err)
				}
				if err := syscall.Connect(fd, &eps[i%len(eps)]); err != nil {
					b.Fatal(err)
				}
				if exchange {
					if _, err := syscall.Write(fd, req); err != nil {
						b.Fatal(err)
					}
					got := 0
					for range 16 { // to the end of the response head, as a probe reads
						n, err := syscall.Read(fd, buf[got:])
						if n <= 0 || err != nil {
							break
						}
						if got += n; bytes.Contains(buf[:got], []byte("\r\n\r\n")) {
							break
						}
					}
				}
				if v.rst {
					syscall.SetsockoptLinger(fd, syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 0})
				}
				syscall.Close(fd)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
