package healthroute

import (
	"testing"
	"time"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/routing"
)

func TestParseValid(t *testing.T) {
	cfg := mustParse(t, `healthroute example.org {
		ttl 30
		fallthrough
		max_probes 64
		region us-east-1 38.9 -77.0
		check a http http://192.0.2.10:8080/health {
			interval 10s
			timeout 2s
			failure_threshold 2
			recovery_threshold 5
			host www.example.org
			match "OK now"
			status 200-299
			invert
			measure_latency
		}
		check b https https://192.0.2.11/
		check c tcp 192.0.2.30:5432 {
			disabled
		}
		check both calculated a b c {
			threshold 2
		}
		check canary prometheus http://127.0.0.1:9090 {
			query canary_consecutive_failures >= bool 2
			insufficient_data unhealthy
		}
		check ws websocket wss://api.example.org/ws {
			send {"action":"heartbeat"}
			expect pong
		}
		check g grpc grpc://127.0.0.1:50051 {
			service my.Service
			tls
		}
		record www.example.org. weighted {
			weight 10 A 192.0.2.10 check a id first
			weight 0 A 192.0.2.11 192.0.2.12 check both
		}
		record api.example.org. failover {
			primary   alias www.example.org. evaluate_target_health no
			secondary A 198.51.100.20 check canary
		}
		record m.example.org. multivalue {
			value AAAA 2001:db8::1 check ws
			value AAAA 2001:db8::2
		}
		record *.apps.example.org. simple {
			CNAME www.example.org.
		}
	}`)
	a := cfg.Checks["a"]
	if cfg.TTL != 30 || cfg.MaxInFlight != 64 || a.Interval != 10*time.Second || a.Timeout != 2*time.Second ||
		a.Fails != 2 || a.Passes != 5 || a.Host != "www.example.org" || a.Match != "OK now" ||
		a.Status != [2]int{200, 299} || !a.Invert || !a.MeasureLatency {
		t.Errorf("check a parsed as %+v", a)
	}
	if b := cfg.Checks["b"]; b.Interval != health.DefaultInterval || b.Fails != 3 || b.Passes != 3 || b.MeasureLatency {
		t.Errorf("check b defaults: %+v", b)
	}
	if both := cfg.Checks["both"]; both.Threshold != 2 || len(both.Children) != 3 || both.Children[0] != a {
		t.Errorf("calculated check: %+v", both)
	}
	if p := cfg.Checks["canary"]; p.Query != "canary_consecutive_failures >= bool 2" || p.NoData != health.NoDataUnhealthy || p.Fails != 1 {
		t.Errorf("prometheus check: %+v", p)
	}
	if ws := cfg.Checks["ws"]; ws.Send != `{"action":"heartbeat"}` || ws.Expect != "pong" {
		t.Errorf("websocket check: send %q expect %q", ws.Send, ws.Expect)
	}
	if g := cfg.Checks["g"]; g.Service != "my.Service" || !g.TLS {
		t.Errorf("grpc check: %+v", g)
	}
	www := cfg.Records[0]
	if www.Policy != routing.PolicyWeighted || www.Members[0].Weight != 10 || www.Members[0].ID != "first" ||
		www.Members[0].Check != a || len(www.Members[1].Addrs) != 2 {
		t.Errorf("weighted record: %+v %+v", www.Members[0], www.Members[1])
	}
	api := cfg.Records[1]
	if api.Members[0].Kind != routing.KindAlias || api.Members[0].ETH || api.Members[1].Role != routing.RoleSecondary {
		t.Errorf("failover record: %+v %+v", api.Members[0], api.Members[1])
	}
	if cfg.Records[3].Name != "*.apps.example.org." {
		t.Errorf("wildcard owner %q", cfg.Records[3].Name)
	}
	if !cfg.Fall.Through("x.example.org.") {
		t.Error("fallthrough not set")
	}
}

// TestParseOneLineBlocks: README writes `api ADDRESS [{ token_file FILE }]`; a
// block on one line must parse like one spread over several.
func TestParseOneLineBlocks(t *testing.T) {
	tok := coretest.WriteFile(t, "token", "0123456789abcdef0123\n")
	cfg := mustParse(t, `healthroute {
		api 127.0.0.1:8053 { token_file `+tok+` }
		check c tcp 127.0.0.1:80 { interval 1s }
		check d tcp 127.0.0.1:81 { }
		record a.example.org. simple { A 192.0.2.1 check c }
		record b.example.org. weighted {
			weight 1 A 192.0.2.2 check d }
	}`)
	if cfg.API == nil || cfg.API.TokenFile != tok {
		t.Errorf("api: %+v", cfg.API)
	}
	if cfg.Checks["c"].Interval != time.Second {
		t.Errorf("interval %v, want 1s", cfg.Checks["c"].Interval)
	}
	if len(cfg.Records) != 2 || len(cfg.Records[0].Members) != 1 || cfg.Records[0].Members[0].Check != cfg.Checks["c"] ||
		len(cfg.Records[1].Members) != 1 {
		t.Errorf("records: %+v", cfg.Records)
	}
}

func TestParseDefaultsETH(t *testing.T) {
	cfg := mustParse(t, `healthroute {
		record a.example.org. simple {
			alias b.example.org.
		}
		record b.example.org. simple {
			A 192.0.2.1
		}
	}`)
	if !cfg.Records[0].Members[0].ETH {
		t.Error("evaluate_target_health must default to on for alias members (docs/routing.md#evaluate-target-health)")
	}
}

// TestParseErrors asserts that each refused Corefile names the file, the line and
// what was expected.
func TestParseErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"unknown property", "healthroute {\nbogus 1\n}", 2, "unknown property 'bogus'"},
		{"bad ttl", "healthroute {\nttl -1\n}", 2, "ttl: invalid value '-1'"},
		{"unknown check type", "healthroute {\ncheck a smtp 192.0.2.1:25\n}", 2, "unknown type 'smtp'"},
		{"tcp target without port", "healthroute {\ncheck a tcp 192.0.2.1\n}", 2, "expected ADDRESS:PORT"},
		{"bad url scheme", "healthroute {\ncheck a http ftp://192.0.2.1/\n}", 2, "scheme 'ftp', expected http"},
		{"websocket scheme", "healthroute {\ncheck a websocket http://192.0.2.1/\n}", 2, "expected ws or wss"},
		{"interval too short", "healthroute {\ncheck a tcp 192.0.2.1:1 {\ninterval 10ms\n}\n}", 3, "interval: invalid duration '10ms'"},
		{"failure threshold range", "healthroute {\ncheck a tcp 192.0.2.1:1 {\nfailure_threshold 11\n}\n}", 3, "failure_threshold: invalid value '11', expected a number from 1 to 10"},
		{"recovery threshold range", "healthroute {\ncheck a tcp 192.0.2.1:1 {\nrecovery_threshold 0\n}\n}", 3, "recovery_threshold: invalid value '0'"},
		{"unknown check option", "healthroute {\ncheck a tcp 192.0.2.1:1 {\nfoo\n}\n}", 3, "check a: unknown property 'foo'"},
		{"status range", "healthroute {\ncheck a http http://192.0.2.1/ {\nstatus 400-300\n}\n}", 3, "status: invalid range '400-300'"},
		{"match on tcp", "healthroute {\ncheck a tcp 192.0.2.1:1 {\nmatch x\n}\n}", 3, "match applies to http and https checks only, not tcp"},
		{"send on http", "healthroute {\ncheck a http http://192.0.2.1/ {\nsend x\n}\n}", 3, "send applies to websocket checks only, not http"},
		{"measure_latency on prometheus", "healthroute {\ncheck a prometheus http://127.0.0.1:9090 {\nquery up\nmeasure_latency\n}\n}", 4, "measure_latency applies to http, https, tcp, websocket and grpc checks only, not prometheus"},
		{"tls on tcp", "healthroute {\ncheck a tcp 192.0.2.1:1 {\ntls\n}\n}", 3, "tls applies to grpc checks only, not tcp"},
		{"query on http", "healthroute {\ncheck a http http://192.0.2.1/ {\nquery up\n}\n}", 3, "query applies to prometheus checks only, not http"},
		{"host on tcp", "healthroute {\ncheck a tcp 192.0.2.1:1 {\nhost x\n}\n}", 3, "host applies to http, https and websocket checks only, not tcp"},
		{"calculated unknown child", "healthroute {\ncheck a calculated b\n}", 2, "unknown child check 'b'"},
		{"calculated cycle", "healthroute {\ncheck a calculated b\ncheck b calculated a\n}", 2, "form a cycle"},
		{"calculated threshold range", "healthroute {\ncheck x tcp 192.0.2.1:1\ncheck a calculated x {\nthreshold 300\n}\n}", 4, "threshold: invalid value '300', expected a number from 0 to 256"},
		{"threshold on http", "healthroute {\ncheck a http http://192.0.2.1/ {\nthreshold 1\n}\n}", 3, "threshold applies to calculated checks only"},
		{"prometheus without query", "healthroute {\ncheck a prometheus http://127.0.0.1:9090\n}", 2, "prometheus needs a query"},
		{"bad insufficient_data", "healthroute {\ncheck a prometheus http://127.0.0.1:9090 {\nquery up\ninsufficient_data maybe\n}\n}", 4, "insufficient_data: invalid value 'maybe'"},
		{"duplicate check", "healthroute {\ncheck a tcp 192.0.2.1:1\ncheck a tcp 192.0.2.1:2\n}", 3, "check 'a' is defined twice"},
		{"unknown policy", "healthroute {\nrecord a.example.org. roundrobin {\nA 192.0.2.1\n}\n}", 2, "unknown policy 'roundrobin'"},
		{"record outside zone", "healthroute {\nrecord a.example.net. simple {\nA 192.0.2.1\n}\n}", 2, "not within the zones"},
		{"record without block", "healthroute {\nrecord a.example.org. simple\n}", 2, "expected '{'"},
		{"key of another policy", "healthroute {\nrecord a.example.org. weighted {\nprimary A 192.0.2.1\n}\n}", 3, "'primary' is not a member key of weighted records, expected 'weight N'"},
		{"weight out of range", "healthroute {\nrecord a.example.org. weighted {\nweight 256 A 192.0.2.1\n}\n}", 3, "weight: invalid value '256', expected a number from 0 to 255"},
		{"bad address", "healthroute {\nrecord a.example.org. simple {\nA 2001:db8::1\n}\n}", 3, "invalid A address '2001:db8::1'"},
		{"unknown member option", "healthroute {\nrecord a.example.org. simple {\nA 192.0.2.1 ttl 5\n}\n}", 3, "invalid A address 'ttl'"},
		{"ETH on a plain target", "healthroute {\nrecord a.example.org. simple {\nA 192.0.2.1 check c evaluate_target_health\n}\n}", 3, "evaluate_target_health applies to alias targets only"},
		{"unknown check", "healthroute {\nrecord a.example.org. simple {\nA 192.0.2.1 check nope\n}\n}", 3, "unknown check 'nope'"},
		{"unknown alias target", "healthroute {\nrecord a.example.org. simple {\nalias b.example.org.\n}\n}", 3, "unknown alias target 'b.example.org.'"},
		{"alias cycle", "healthroute {\nrecord a.example.org. simple {\nalias b.example.org.\n}\nrecord b.example.org. simple {\nalias a.example.org.\n}\n}", 2, "alias cycle: a.example.org. -> b.example.org. -> a.example.org."},
		{"duplicate set id", "healthroute {\nrecord a.example.org. weighted {\nweight 1 A 192.0.2.1 id x\nweight 1 A 192.0.2.2 id x\n}\n}", 4, "duplicate set identifier 'x'"},
		{"duplicate default set id", "healthroute {\nrecord a.example.org. weighted {\nweight 1 A 192.0.2.1\nweight 2 A 192.0.2.1\n}\n}", 4, "duplicate set identifier '192.0.2.1'"},
		{"A and CNAME at one name", "healthroute {\nrecord a.example.org. weighted {\nweight 1 A 192.0.2.1\nweight 1 CNAME b.example.org.\n}\n}", 2, "CNAME and A/AAAA at one name"},
		{"A and CNAME through an alias", "healthroute {\nrecord a.example.org. weighted {\nweight 1 A 192.0.2.1\nweight 1 alias c.example.org.\n}\nrecord c.example.org. simple {\nCNAME x.example.net.\n}\n}", 2, "CNAME and A/AAAA at one name"},
		{"two primaries", "healthroute {\nrecord a.example.org. failover {\nprimary A 192.0.2.1\nprimary A 192.0.2.2\n}\n}", 4, "found a second primary"},
		{"failover without primary", "healthroute {\nrecord a.example.org. failover {\nsecondary A 192.0.2.1\n}\n}", 2, "has no primary"},
		{"two simple members", "healthroute {\nrecord a.example.org. simple {\nA 192.0.2.1\nA 192.0.2.2\n}\n}", 4, "a simple record has one member per type"},
		{"multivalue alias", "healthroute {\nrecord a.example.org. multivalue {\nvalue alias b.example.org.\n}\nrecord b.example.org. simple {\nA 192.0.2.1\n}\n}", 3, "multivalue members must be A or AAAA"},
		{"record twice", "healthroute {\nrecord a.example.org. simple {\nA 192.0.2.1\n}\nrecord a.example.org. simple {\nA 192.0.2.2\n}\n}", 5, "defined twice"},
		{"empty record", "healthroute {\nrecord a.example.org. simple {\n}\n}", 3, "no members"},
		{"bad region", "healthroute {\nregion x 91 0\n}", 2, "invalid coordinates '91 0'"},
	})
}
