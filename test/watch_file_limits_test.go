package test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// defaultFileLimit is the size limit of route53 and latency_table files users get.
const defaultFileLimit = 64 << 20

// dnsLoad queries name (type A) from workers goroutines, each every 2 ms, until
// stop is called; an answer that is not one of the addresses want() allows at the
// time counts as wrong. A query unanswered within 1 s is asked once more, as stub
// resolvers do, and counted as retried; unanswered again, as lost.
type dnsLoad struct {
	sent, retried, lost, wrong atomic.Int64
	lastWrong, lastLost        atomic.Value
	stop                       func()
}

func startDNSLoad(t *testing.T, addr, name string, workers int, want func(string) bool) *dnsLoad {
	l := &dnsLoad{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Timeout: time.Second}
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for range 150_000 { // 5 minutes at most
				select {
				case <-done:
					return
				case <-tick.C:
				}
				l.sent.Add(1)
				r, _, err := c.Exchange(m, addr)
				if err != nil {
					l.retried.Add(1)
					r, _, err = c.Exchange(m, addr)
				}
				switch {
				case err != nil:
					l.lost.Add(1)
					l.lastLost.Store(time.Now().Format("15:04:05.000") + " " + err.Error())
				case len(r.Answer) != 1 || !want(r.Answer[0].(*dns.A).A.String()):
					l.wrong.Add(1)
					l.lastWrong.Store(r.String())
				}
			}
		}()
	}
	var once sync.Once
	l.stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(l.stop)
	return l
}

// resetPeak resets process pid's peak resident size (VmHWM) to its current one.
func resetPeak(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak RSS: %v", err)
	}
}

// writeExport writes a list-resource-record-sets export of n A record sets, plus
// www.example.com. answering www, to path, streamed.
func writeExport(t *testing.T, path string, n int, www string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, `{"ResourceRecordSets": [
	{"Name": "example.com.", "Type": "SOA", "TTL": 900, "ResourceRecords": [{"Value": "ns-1.awsdns-1.com. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"}]},
	{"Name": "www.example.com.", "Type": "A", "TTL": 30, "ResourceRecords": [{"Value": "%s"}]}`, www)
	for i := range n {
		fmt.Fprintf(w, ",\n\t{\"Name\": \"h%06d.example.com.\", \"Type\": \"A\", \"TTL\": 60, \"ResourceRecords\": [{\"Value\": \"10.%d.%d.%d\"}]}",
			i, i>>16&255, i>>8&255, i&255)
	}
	fmt.Fprint(w, "\n]}\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// refusals counts the failed route53 reloads in a server's log.
func refusals(s *coretest.Server) int {
	return strings.Count(s.Output(), "keeping the previous configuration")
}

const mib = 1 << 20

// exportPeakFactor bounds the peak RSS a route53 export's load adds, as a multiple
// of the export's size.
const exportPeakFactor = 32

// A watched route53 export replaced, under DNS load, by a 500 MB file that is not
// a zone (sparse: it takes no disk), then by 60 MB of log lines (under the size
// limit: refused by its first token), then by a real export of 200,000 record sets.
// The junk is refused within 2 s of the watcher seeing it, the peak RSS meanwhile
// stays under what the server had plus the size limit, and afterwards RSS is back
// within 10%; the export is loaded with a peak under 32 times its size above what
// the server had. Every query is answered, from the configuration in force.
func TestWatchedExportJunkAndBigExportCostBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	records := filepath.Join(dir, "zone.json")
	writeExport(t, records, 0, "192.0.2.1")
	port := coretest.FreePort(t)
	s := coretest.Start(t, fmt.Sprintf("example.com:%d {\n\tbind 127.0.0.1\n\thealthroute {\n\t\troute53 {\n\t\t\trecords %s\n\t\t}\n\t}\n}\n", port, records), port, "www.example.com")
	var answer atomic.Value // the answers allowed at the time, separated by '|'
	answer.Store("192.0.2.1")
	load := startDNSLoad(t, s.Addr, "www.example.com.", 4, func(a string) bool {
		return slices.Contains(strings.Split(answer.Load().(string), "|"), a)
	})
	loadStart := time.Now()
	coretest.WaitUntil(t, 10*time.Second, "DNS load under way", func() bool { return load.sent.Load() > 1000 }, func() string { return "" })
	// "Before" is the server's steady state, which includes one reload: the first
	// reload (of the same export, as a new file) grows the runtime's own structures
	// once, junk or not.
	n := strings.Count(s.Output(), "Reloading complete")
	replaceFile(t, records, func(t *testing.T, tmp string) { writeExport(t, tmp, 0, "192.0.2.1") })
	coretest.WaitUntil(t, watchPeriod+3*time.Second, "the warm-up reload", func() bool { return strings.Count(s.Output(), "Reloading complete") > n }, s.Output)
	before, _ := coretest.Memory(t, s.Cmd.Process.Pid)
	t.Logf("before: RSS %.1f MiB", float64(before)/mib)

	for _, j := range []struct {
		name  string
		write func(t *testing.T, path string)
	}{{"500 MB sparse junk", writeSparseJunk}, {"60 MB of log lines", writeLogJunk}} {
		junkRefused(t, s, records, before, j.name, j.write)
	}
	if !strings.Contains(s.Output(), "is over the size limit of 67108864 bytes (max_file_size raises the limit)") ||
		!strings.Contains(s.Output(), "expected a JSON object or array, found a number") {
		t.Errorf("the refusals do not say why:\n%s", s.Output())
	}

	answer.Store("192.0.2.1|192.0.2.2") // either, until the new configuration is in
	bigExportLoaded(t, s, records, before)
	load.stop()
	t.Logf("DNS: %d queries (%.0f a second), %d retried after 1 s without an answer, %d lost, %d wrong", load.sent.Load(),
		float64(load.sent.Load())/time.Since(loadStart).Seconds(), load.retried.Load(), load.lost.Load(), load.wrong.Load())
	if load.lost.Load() != 0 || load.wrong.Load() != 0 {
		t.Errorf("%d of %d queries lost (last: %v), %d wrong (last: %v)\n%s", load.lost.Load(), load.sent.Load(), load.lastLost.Load(),
			load.wrong.Load(), load.lastWrong.Load(), s.Output())
	}
}

// replaceFile writes a new file with write and renames it over path; it returns
// when the rename was done.
func replaceFile(t *testing.T, path string, write func(t *testing.T, path string)) time.Time {
	t.Helper()
	tmp := path + ".new"
	write(t, tmp)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// writeSparseJunk writes 500 MB of zeros that take no disk.
func writeSparseJunk(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(500 << 20); err != nil {
		t.Fatal(err)
	}
}

// writeLogJunk writes 60 MB of log lines, streamed.
func writeLogJunk(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	line := "2026-12-01T18:40:01Z INFO request served in 3ms from 192.0.2.77\n"
	for range 60 * mib / len(line) {
		w.WriteString(line)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// junkRefused renames the junk write makes over the export at path, waits for the
// server to refuse it, checks the server's memory against before, and removes the
// junk.
func junkRefused(t *testing.T, s *coretest.Server, path string, before int64, name string, write func(*testing.T, string)) {
	t.Helper()
	pid := s.Cmd.Process.Pid
	resetPeak(t, pid)
	n := refusals(s)
	at := replaceFile(t, path, write)
	defer os.Remove(path) // the junk goes; the next file is renamed in its place
	// The watcher looks every 2 s; the refusal follows within 2 s of that.
	coretest.WaitUntil(t, watchPeriod+2*time.Second, name+" refused", func() bool { return refusals(s) > n }, s.Output)
	took := time.Since(at)
	_, peak := coretest.Memory(t, pid)
	if peak > before+defaultFileLimit {
		t.Errorf("%s: peak RSS %.1f MiB; want under %.1f MiB (before plus the size limit)", name, float64(peak)/mib, float64(before+defaultFileLimit)/mib)
	}
	// The failed reload's memory is returned right after it is logged.
	var rss int64
	coretest.WaitUntil(t, 5*time.Second, name+": RSS back within 10% of before",
		func() bool { rss, _ = coretest.Memory(t, pid); return rss <= before+before/10 },
		func() string {
			return fmt.Sprintf("RSS %.1f MiB, before %.1f MiB", float64(rss)/mib, float64(before)/mib)
		})
	t.Logf("%s: refused %s after the rename; peak RSS %.1f MiB, RSS after %.1f MiB", name, took.Round(time.Millisecond), float64(peak)/mib, float64(rss)/mib)
}

// bigExportLoaded renames an export of 200,000 record sets over the one at path,
// waits for its answers, and checks the server's peak memory against before.
func bigExportLoaded(t *testing.T, s *coretest.Server, path string, before int64) {
	t.Helper()
	pid := s.Cmd.Process.Pid
	resetPeak(t, pid)
	at := replaceFile(t, path, func(t *testing.T, tmp string) { writeExport(t, tmp, 200_000, "192.0.2.2") })
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s.WaitFor(t, "www.example.com.", dns.TypeA, 30*time.Second, "the 200,000-record-set export", func(m *dns.Msg) bool {
		return len(m.Answer) == 1 && m.Answer[0].(*dns.A).A.String() == "192.0.2.2"
	})
	t.Logf("export of %.1f MiB loaded %s after the rename", float64(fi.Size())/mib, time.Since(at).Round(time.Millisecond))
	if m := s.Query(t, "h199999.example.com.", dns.TypeA); len(m.Answer) != 1 {
		t.Errorf("the export's last record set: %v", m)
	}
	rss, peak := coretest.Memory(t, pid)
	t.Logf("200,000-record-set export: peak RSS %.1f MiB, RSS %.1f MiB", float64(peak)/mib, float64(rss)/mib)
	// Loading an export converts it to Corefile lines that CoreDNS's parser holds
	// as tokens all at once: the peak is a multiple of the file's size (17x to 21x
	// measured for this one, with the garbage collector's timing), not of the
	// limit. The bound holds that multiple, with room.
	if bound := before + exportPeakFactor*fi.Size(); peak > bound {
		t.Errorf("peak RSS %.1f MiB; want under %.1f MiB (before plus %d times the export's size)", float64(peak)/mib, float64(bound)/mib, exportPeakFactor)
	}
}
