package healthroute

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/routing"
	"github.com/healthroute/healthroute/view"
)

// TestParseRefusesHalfApplied: what used to be accepted and silently ignored or
// overwritten is refused with the file, the line and what was expected.
func TestParseRefusesHalfApplied(t *testing.T) {
	tok := coretest.WriteFile(t, "token", "0123456789abcdef\n")
	checkParseErrors(t, []parseErrorCase{
		{"second healthroute", "healthroute {\nttl 5\n}\nhealthroute {\nttl 6\n}", 4, "healthroute is given twice in this server block (first at line 1), expected one healthroute block"},
		{"second bare healthroute", "healthroute\nhealthroute", 2, "healthroute is given twice"},
		{"block on the next line", "healthroute\n{\nttl 5\n}", 2, "unexpected '{', expected '{' at the end of the healthroute line"},
		{"ttl twice", "healthroute {\nttl 1\nttl 2\n}", 3, "ttl is given twice (first at line 2), expected it once"},
		{"max_probes twice", "healthroute {\nmax_probes 1\nmax_probes 2\n}", 3, "max_probes is given twice"},
		{"max_file_size twice", "healthroute {\nmax_file_size 1M\nmax_file_size 2M\n}", 3, "max_file_size is given twice"},
		{"max_file_size not a size", "healthroute {\nmax_file_size 12X\n}", 2, "max_file_size: invalid value '12X', expected a size from 1K to 4G"},
		{"max_file_size under 1K", "healthroute {\nmax_file_size 1000\n}", 2, "max_file_size: invalid value '1000'"},
		{"max_file_size over 4G", "healthroute {\nmax_file_size 5G\n}", 2, "max_file_size: invalid value '5G'"},
		{"latency_table over max_file_size", "healthroute {\nmax_file_size 1K\nregion r 1 2\nlatency_table " + coretest.WriteFile(t, "big.csv", strings.Repeat("192.0.2.0/24,r,1\n", 100)) + "\n}", 4,
			"is over the size limit of 1024 bytes (max_file_size raises the limit)"},
		{"latency_table twice", "healthroute {\nlatency_table a.csv\nlatency_table b.csv\n}", 3, "latency_table is given twice"},
		{"soa twice", "healthroute {\nsoa ns1.example.org. hostmaster.example.org.\nsoa ns2.example.org. hostmaster.example.org.\n}", 3, "soa is given twice (first at line 2)"},
		{"ns twice", "healthroute {\nns ns1.example.org.\nns ns2.example.org.\n}", 3, "ns is given twice (first at line 2)"},
		{"fallthrough twice", "healthroute {\nfallthrough\nfallthrough example.org\n}", 3, "fallthrough is given twice"},
		{"api twice", "healthroute {\napi 127.0.0.1:1\napi 127.0.0.1:2\n}", 3, "api is given twice"},
		{"token_file twice", "healthroute {\napi 127.0.0.1:1 {\ntoken_file " + tok + "\ntoken_file " + tok + "\n}\n}", 4, "api: token_file is given twice"},
		{"interval twice", "healthroute {\ncheck a tcp 192.0.2.1:1 {\ninterval 1s\ninterval 2s\n}\n}", 4, "check a: interval is given twice (first at line 3)"},
		{"host twice", "healthroute {\ncheck a http http://192.0.2.1/ {\nhost x\nhost y\n}\n}", 4, "check a: host is given twice"},
		{"invert twice", "healthroute {\ncheck a tcp 192.0.2.1:1 {\ninvert\ninvert\n}\n}", 4, "check a: invert is given twice"},
		{"interval on calculated", "healthroute {\ncheck x tcp 192.0.2.1:1\ncheck a calculated x {\ninterval 10s\n}\n}", 4, "check a: interval applies to http, https, tcp, websocket, grpc and prometheus checks only, not calculated"},
		{"failure_threshold on calculated", "healthroute {\ncheck x tcp 192.0.2.1:1\ncheck a calculated x {\nfailure_threshold 2\n}\n}", 4, "failure_threshold applies to"},
		{"timeout on calculated", "healthroute {\ncheck x tcp 192.0.2.1:1\ncheck a calculated x { timeout 1s }\n}", 3, "timeout applies to"},
		{"expect on grpc", "healthroute {\ncheck a grpc grpc://192.0.2.1:1 {\nexpect x\n}\n}", 3, "expect applies to websocket checks only, not grpc"},
		{"service on http", "healthroute {\ncheck a http http://192.0.2.1/ {\nservice x\n}\n}", 3, "service applies to grpc checks only, not http"},
		{"insufficient_data on tcp", "healthroute {\ncheck a tcp 192.0.2.1:1 {\ninsufficient_data healthy\n}\n}", 3, "insufficient_data applies to prometheus checks only, not tcp"},
		{"status on websocket", "healthroute {\ncheck a websocket ws://192.0.2.1/ {\nstatus 200\n}\n}", 3, "status applies to http and https checks only, not websocket"},
		{"member check twice", "healthroute {\ncheck c tcp 192.0.2.1:1\nrecord a.example.org. simple {\nA 192.0.2.1 check c check c\n}\n}", 4, "check is given twice on one member"},
		{"member id twice", "healthroute {\nrecord a.example.org. simple {\nA 192.0.2.1 id x id y\n}\n}", 3, "id is given twice on one member"},
		{"block after ttl", "healthroute {\nttl 5 {\n}\n}", 2, "ttl: unexpected '{', expected the end of the line (ttl takes no block)"},
		{"block after region", "healthroute {\nregion r 1 2 {\n}\n}", 2, "region takes no block"},
		{"argument to fleet", "healthroute {\nfleet x {\n}\n}", 2, "Wrong argument count"},
		{"short token", "healthroute {\napi 127.0.0.1:1 {\ntoken_file " + coretest.WriteFile(t, "short", "tooshort\n") + "\n}\n}", 3, "holds a token of 8 characters, expected at least 16"},
		{"blank token", "healthroute {\napi 127.0.0.1:1 {\ntoken_file " + coretest.WriteFile(t, "blank", " \n") + "\n}\n}", 3, "holds a token of 0 characters, expected at least 16"},
	})
}

// TestParseRefusesBadNumbers: NaN, infinities and out-of-range values are refused
// wherever the Corefile holds a number.
func TestParseRefusesBadNumbers(t *testing.T) {
	geo := func(coords string) string {
		return "healthroute {\nrecord g.example.org. geoproximity {\ncoordinates " + coords + " A 192.0.2.1\n}\n}"
	}
	const want = "expected LATITUDE (-90..90) LONGITUDE (-180..180)"
	checkParseErrors(t, []parseErrorCase{
		{"region NaN", "healthroute {\nregion r NaN NaN\n}", 2, "region r: invalid coordinates 'NaN NaN', " + want},
		{"region latitude NaN", "healthroute {\nregion r nan 0\n}", 2, "invalid coordinates 'nan 0'"},
		{"region Inf", "healthroute {\nregion r 0 +Inf\n}", 2, "invalid coordinates '0 +Inf'"},
		{"region -Inf", "healthroute {\nregion r -Infinity 0\n}", 2, "invalid coordinates '-Infinity 0'"},
		{"region longitude range", "healthroute {\nregion r 0 180.5\n}", 2, "invalid coordinates '0 180.5'"},
		{"region huge", "healthroute {\nregion r 1e400 0\n}", 2, "invalid coordinates '1e400 0'"},
		{"coordinates NaN", geo("NaN 0"), 3, "coordinates: invalid 'NaN 0', " + want},
		{"coordinates Inf", geo("0 Inf"), 3, "coordinates: invalid '0 Inf'"},
		{"coordinates range", geo("-90.01 0"), 3, "coordinates: invalid '-90.01 0'"},
		{"bias NaN", "healthroute {\nregion r 1 2\nrecord g.example.org. geoproximity {\nregion r bias NaN A 192.0.2.1\n}\n}", 4, "bias: invalid value 'NaN', expected a number from -99 to 99"},
		{"bias range", "healthroute {\nregion r 1 2\nrecord g.example.org. geoproximity {\nregion r bias 100 A 192.0.2.1\n}\n}", 4, "bias: invalid value '100'"},
		{"weight NaN", "healthroute {\nrecord a.example.org. weighted {\nweight NaN A 192.0.2.1\n}\n}", 3, "weight: invalid value 'NaN', expected a number from 0 to 255"},
		{"weight negative", "healthroute {\nrecord a.example.org. weighted {\nweight -1 A 192.0.2.1\n}\n}", 3, "weight: invalid value '-1'"},
		{"ttl NaN", "healthroute {\nttl NaN\n}", 2, "ttl: invalid value 'NaN', expected seconds from 0 to 2147483647"},
		{"ttl too large", "healthroute {\nttl 2147483648\n}", 2, "ttl: invalid value '2147483648'"},
		{"max_probes zero", "healthroute {\nmax_probes 0\n}", 2, "max_probes: invalid value '0', expected a number from 1 to 1000000"},
		{"max_probes Inf", "healthroute {\nmax_probes Inf\n}", 2, "max_probes: invalid value 'Inf'"},
		{"interval too long", "healthroute {\ncheck a tcp 192.0.2.1:1 {\ninterval 25h\n}\n}", 3, "interval: invalid duration '25h', expected a duration from 100ms to 24h0m0s"},
		{"interval overflow", "healthroute {\ncheck a tcp 192.0.2.1:1 {\ninterval 9999999999h\n}\n}", 3, "interval: invalid duration '9999999999h'"},
		{"timeout negative", "healthroute {\ncheck a tcp 192.0.2.1:1 {\ntimeout -1s\n}\n}", 3, "timeout: invalid duration '-1s', expected a duration from 1ms to 1h0m0s"},
		{"timeout too long", "healthroute {\ncheck a tcp 192.0.2.1:1 {\ntimeout 2h\n}\n}", 3, "timeout: invalid duration '2h'"},
		{"threshold NaN", "healthroute {\ncheck x tcp 192.0.2.1:1\ncheck a calculated x {\nthreshold NaN\n}\n}", 4, "threshold: invalid value 'NaN', expected a number from 0 to 256"},
		{"failure_threshold Inf", "healthroute {\ncheck a tcp 192.0.2.1:1 {\nfailure_threshold Inf\n}\n}", 3, "failure_threshold: invalid value 'Inf', expected a number from 1 to 10"},
		{"status NaN", "healthroute {\ncheck a http http://192.0.2.1/ {\nstatus NaN\n}\n}", 3, "status: invalid range 'NaN'"},
		{"tcp port range", "healthroute {\ncheck a tcp 192.0.2.1:65536\n}", 2, "expected ADDRESS:PORT (port 1-65535)"},
		{"url port range", "healthroute {\ncheck a http http://192.0.2.1:0/\n}", 2, "port '0', expected 1-65535"},
		{"api port range", "healthroute {\napi 127.0.0.1:99999\n}", 2, "api: invalid address '127.0.0.1:99999', expected HOST:PORT"},
		{"api port zero", "healthroute {\napi 127.0.0.1:0\n}", 2, "api: invalid address '127.0.0.1:0'"},
		{"api port name", "healthroute {\napi 127.0.0.1:http\n}", 2, "api: invalid address '127.0.0.1:http'"},
	})
}

// TestLatencyTableRefusesBadCells: a cell that is not a finite number of milliseconds
// in range is refused with the table's file and line, under the Corefile's line.
func TestLatencyTableRefusesBadCells(t *testing.T) {
	var cases []parseErrorCase
	for _, cell := range []string{"NaN", "nan", "Inf", "-Inf", "+Infinity", "-1", "4294967.5", "1e300", "0x10", "ten"} {
		table := coretest.WriteFile(t, "table.csv", "client_cidr,region,milliseconds\n192.0.2.0/24,r,"+cell+"\n")
		cases = append(cases, parseErrorCase{"cell " + cell,
			"healthroute {\nregion r 1 2\nlatency_table " + table + "\nrecord l.example.org. latency {\nregion r A 192.0.2.1\n}\n}",
			3, "latency_table: " + table + ":2: invalid milliseconds '" + cell + "', expected a number from 0 to 4294967"})
	}
	checkParseErrors(t, cases)
	for _, cell := range []string{"0", "0.001", "4294967"} {
		if _, err := routing.ReadLatencyTable(strings.NewReader("192.0.2.0/24,r,"+cell), "t.csv", map[string]int{"r": 0}); err != nil {
			t.Errorf("cell %s refused: %v", cell, err)
		}
	}
}

// TestValidCoords: the one range check every latitude and longitude goes through.
func TestValidCoords(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		lat, lon float64
		ok       bool
	}{
		{0, 0, true}, {90, 180, true}, {-90, -180, true},
		{nan, 0, false}, {0, nan, false}, {inf, 0, false}, {0, -inf, false}, {90.0001, 0, false}, {0, -180.0001, false},
	} {
		if got := view.ValidCoords(c.lat, c.lon); got != c.ok {
			t.Errorf("ValidCoords(%v, %v) = %v, want %v", c.lat, c.lon, got, c.ok)
		}
	}
}

// checkLadder returns a block of depth levels of two calculated checks, each counting
// both checks of the level below: 2^depth paths from the top to the probed checks.
func checkLadder(depth int) string {
	var b strings.Builder
	b.WriteString("healthroute {\ncheck a0 tcp 127.0.0.1:1\ncheck b0 tcp 127.0.0.1:2\n")
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, "check a%d calculated a%d b%d\ncheck b%d calculated a%d b%d\n", i, i-1, i-1, i, i-1, i-1)
	}
	fmt.Fprintf(&b, "record x.example.org. simple {\nA 192.0.2.1 check a%d\n}\n}", depth)
	return b.String()
}

// TestParseRefusesExponentialChecks: calculated checks sharing children in a ladder
// would be evaluated once per path, 2^40 times here; the block is refused at the
// level where the count passes the limit, instead of hanging startup.
func TestParseRefusesExponentialChecks(t *testing.T) {
	// Each check of level i counts 2^(i+1)-1 paths: the running total passes 1,000,000
	// at b17 (1,048,536), on line 3+2*17.
	checkParseErrors(t, []parseErrorCase{{"ladder", checkLadder(40), 37,
		"check b17: calculated checks expand to more than 1000000 child evaluations"}})
	mustParse(t, checkLadder(10)) // 4,000 paths: accepted
	var b strings.Builder
	b.WriteString("healthroute {\n")
	for i := range 256 {
		fmt.Fprintf(&b, "check t%d tcp 127.0.0.1:%d\n", i, i+1)
	}
	kids := ""
	for i := range 256 {
		kids += fmt.Sprintf(" t%d", i)
	}
	for i := range 100 { // 100 wide checks of 256 children each: linear, accepted
		fmt.Fprintf(&b, "check c%d calculated%s\n", i, kids)
	}
	b.WriteString("}")
	mustParse(t, b.String())
}

// TestOverrideRefusesShortTokenAfterRotation: the token file is read on each override;
// emptied or shortened since startup (a rotation caught halfway, or emptied to
// disable overrides), it authorises nothing, not even an empty bearer token.
func TestOverrideRefusesShortTokenAfterRotation(t *testing.T) {
	op, h := statusServer(t, explainBlock)
	token := coretest.WriteFile(t, "token", "0123456789abcdef0123\n")
	api := op.Handler(token)
	post := func(bearer string) int {
		req := httptest.NewRequest(http.MethodPost, "/v1/checks/c1/override", strings.NewReader("unhealthy"))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Authorization", "Bearer "+bearer)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		return rec.Code
	}
	c1Healthy := func() bool {
		for _, c := range h.Checks() {
			if c.Name == "c1" {
				return c.Healthy
			}
		}
		t.Fatal("no check c1")
		return false
	}
	for _, content := range []string{"", " \n", "short\n", "0123456789abcde\n"} {
		if err := os.WriteFile(token, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		bearer := strings.TrimSpace(content)
		if code := post(bearer); code != http.StatusForbidden || !c1Healthy() {
			t.Errorf("token file %q, bearer %q: %d, c1 healthy=%t; want 403 and no override", content, bearer, code, c1Healthy())
		}
	}
	if err := os.WriteFile(token, []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := post("0123456789abcdef"); code != http.StatusOK || c1Healthy() {
		t.Errorf("a 16-character token: %d, c1 healthy=%t; want 200 and c1 forced unhealthy", code, c1Healthy())
	}
}
