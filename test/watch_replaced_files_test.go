package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// watchPeriod is how often CoreDNS checks its latency_table and route53 files.
const watchPeriod = 2 * time.Second

// swapLink points the symbolic link link at target atomically (a new link renamed
// over the old one), as Kubernetes updates a mounted ConfigMap.
func swapLink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".new"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// writeStamped writes content to path with the modification time mod.
func writeStamped(t *testing.T, path, content string, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// A latency_table and a route53 export, each read through a symbolic link, are
// replaced by swapping the link to a file of the same size and modification time:
// the server notices both (the file's identity changed) and answers from the new
// files within the watch period, plus the time a reload takes.
func TestWatchedFilesNoticeSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	zone := func(addr string) string {
		return `{"ResourceRecordSets": [
	{"Name": "example.com.", "Type": "SOA", "TTL": 900, "ResourceRecords": [{"Value": "ns-1.awsdns-1.com. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"}]},
	{"Name": "www.example.com.", "Type": "A", "TTL": 30, "ResourceRecords": [{"Value": "` + addr + `"}]}
]}`
	}
	table := func(a, b int) string { return fmt.Sprintf("127.0.0.0/8,a,%d\n127.0.0.0/8,b,%d\n", a, b) }
	v1, v2 := filepath.Join(dir, "v1"), filepath.Join(dir, "v2")
	for _, d := range []string{v1, v2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeStamped(t, filepath.Join(v1, "zone.json"), zone("192.0.2.1"), mod)
	writeStamped(t, filepath.Join(v2, "zone.json"), zone("192.0.2.2"), mod) // same size, same time
	writeStamped(t, filepath.Join(v1, "latency.csv"), table(10, 20), mod)
	writeStamped(t, filepath.Join(v2, "latency.csv"), table(30, 20), mod)
	records, latency := filepath.Join(dir, "zone.json"), filepath.Join(dir, "latency.csv")
	swapLink(t, filepath.Join(v1, "zone.json"), records)
	swapLink(t, filepath.Join(v1, "latency.csv"), latency)

	port := coretest.FreePort(t)
	s := coretest.Start(t, fmt.Sprintf(`example.com:%d {
	bind 127.0.0.1
	healthroute {
		latency_table %s
		region a 0 0
		region b 10 10
		record lat.example.com. latency {
			region a A 198.51.100.1
			region b A 198.51.100.2
		}
		route53 {
			records %s
		}
	}
}`, port, latency, records), port, "www.example.com")
	answers := func(name, want string) func(*dns.Msg) bool {
		return func(m *dns.Msg) bool { return len(m.Answer) == 1 && strings.HasSuffix(m.Answer[0].String(), "\t"+want) }
	}
	s.WaitFor(t, "www.example.com.", dns.TypeA, time.Second, "the first export", answers("www", "192.0.2.1"))
	s.WaitFor(t, "lat.example.com.", dns.TypeA, time.Second, "the first table's nearest region", answers("lat", "198.51.100.1"))

	// The table alone first: loading it reloads nothing else.
	swapLink(t, filepath.Join(v2, "latency.csv"), latency)
	t0 := time.Now()
	s.WaitFor(t, "lat.example.com.", dns.TypeA, watchPeriod+time.Second, "the swapped table's nearest region", answers("lat", "198.51.100.2"))
	t.Logf("latency_table swap answered after %s", time.Since(t0).Round(time.Millisecond))

	swapLink(t, filepath.Join(v2, "zone.json"), records)
	t0 = time.Now()
	s.WaitFor(t, "www.example.com.", dns.TypeA, watchPeriod+2*time.Second, "the swapped export", answers("www", "192.0.2.2"))
	t.Logf("route53 export swap answered after %s", time.Since(t0).Round(time.Millisecond))
}
