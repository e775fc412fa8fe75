package healthroute

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// questionNameSeeds are names as a query's question holds them: plain, upper case,
// escaped, unprintable, the root, empty labels.
var questionNameSeeds = []string{
	"www.example.org.", "WWW.Example.ORG.", "n000042.example.org.", "_sip._tcp.example.org.",
	"a\\.b.example.org.", "a\\032b.example.org.", "a b.example.org.", "a(b).example.org.",
	"\x01x.example.org.", "caf\xc3\xa9.example.org.", ".", "", "a..b.", "x\\", "*.example.org.",
	"@.example.org.", "a\"b.example.org.", "a;b.example.org.", "a$b.example.org.",
}

// TestQuestionName: the name a query is answered for is the one request.Request's Name
// gives (escaped presentation, lower case), plain names taken as they are.
func TestQuestionName(t *testing.T) {
	for _, name := range questionNameSeeds {
		checkQuestionName(t, name)
	}
}

// FuzzQuestionName: the same for any name.
func FuzzQuestionName(f *testing.F) {
	for _, name := range questionNameSeeds {
		f.Add(name)
	}
	f.Fuzz(checkQuestionName)
}

func checkQuestionName(t *testing.T, name string) {
	m := new(dns.Msg)
	m.Question = []dns.Question{{Name: name, Qtype: dns.TypeAAAA, Qclass: dns.ClassINET}}
	got, qt := questionOf(m)
	if want := strings.ToLower(dns.Name(name).String()); got != want || qt != dns.TypeAAAA {
		t.Errorf("questionOf(%q) = %q, %d; want %q, %d", name, got, qt, want, dns.TypeAAAA)
	}
}

// BenchmarkQuestionName: the name of a query, taken as questionOf does, against
// escaping and lower-casing it as request.Request's Name does.
func BenchmarkQuestionName(b *testing.B) {
	m := new(dns.Msg)
	m.SetQuestion("n004217.example.org.", dns.TypeA)
	b.Run("questionOf", func(b *testing.B) {
		for b.Loop() {
			questionOf(m)
		}
	})
	b.Run("escaped-lowered", func(b *testing.B) {
		for b.Loop() {
			_ = strings.ToLower(dns.Name(m.Question[0].Name).String())
		}
	})
}
