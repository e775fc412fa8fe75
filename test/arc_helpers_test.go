package test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// ARNs of the ARC tests' Corefile: its controls form the control panel healthroute.
const (
	arcPanelARN = "arn:aws:route53-recovery-control::000000000000:controlpanel/healthroute"
	arcEastARN  = arcPanelARN + "/routingcontrol/east"
	arcWestARN  = arcPanelARN + "/routingcontrol/west"
	arcRuleARN  = arcPanelARN + "/safetyrule/one-region"
)

// arcFleet is three CoreDNS processes (r53Fleet's) sharing routing controls east
// and west (www.example.org answers the primary while east is on) under the rule
// one-region (at least 1 of east, west on), each serving the Route 53 API's
// listener, and so ARC's APIs. Each is located in use1-az1, where the azaffinity
// record set svc.example.org answers 192.0.2.11 (global: 192.0.2.99).
type arcFleet struct {
	*r53Fleet
	t *testing.T
}

func newARCFleet(t *testing.T) *arcFleet {
	t.Helper()
	f := &arcFleet{r53Fleet: newR53Fleet(t), t: t}
	f.rules = "assertion one-region 1 east west"
	f.extra = `check east control
		check west control
		record www.example.org. failover {
			primary   A 192.0.2.1 check east
			secondary A 198.51.100.1 check west
		}
		location az use1-az1
		record svc.example.org. azaffinity {
			az use1-az1 A 192.0.2.11
			az use1-az2 A 192.0.2.12
			global A 192.0.2.99
		}`
	return f
}

// killAll SIGKILLs every member and waits until each process is gone.
func (f *arcFleet) killAll() {
	f.t.Helper()
	for i, s := range f.srvs {
		p := s.Cmd.Process
		if err := p.Kill(); err != nil {
			f.t.Fatal(err)
		}
		waitUntil(f.t, 5*time.Second, fmt.Sprintf("member %d exits", i), func() bool { return processGone(p.Pid) }, func() string { return "" })
	}
}

// aws runs the real aws CLI for service against member i's API listener and
// returns its output and error.
func (f *arcFleet) aws(i int, service string, args ...string) (string, error) {
	f.t.Helper()
	a := newAWSCLI(f.t, f.apis[i])
	cmd := exec.Command(a.bin, append(append([]string{service}, args...), "--endpoint-url", a.endpoint, "--cli-read-timeout", "20")...)
	cmd.Env = a.env
	cmd.Dir = a.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// decode decodes the CLI's output into v.
func (f *arcFleet) decode(out string, v any) {
	f.t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		f.t.Fatalf("the aws CLI's output: %v\n%s", err, out)
	}
}

// awsJSON runs the CLI, fails the test on an error and decodes its output into v.
func (f *arcFleet) awsJSON(i int, v any, service string, args ...string) {
	f.t.Helper()
	out, err := f.aws(i, service, args...)
	if err != nil {
		f.t.Fatalf("aws %s %s (member %d): %v\n%s", service, strings.Join(args, " "), i, err, out)
	}
	if v != nil && strings.TrimSpace(out) != "" {
		f.decode(out, v)
	}
}

// controlState reads a routing control's state through member i with
// get-routing-control-state.
func (f *arcFleet) controlState(i int, arn string) string {
	f.t.Helper()
	var got struct{ RoutingControlState string }
	f.awsJSON(i, &got, "route53-recovery-cluster", "get-routing-control-state", "--routing-control-arn", arn)
	return got.RoutingControlState
}

// answer is member i's first A record for name.
func (f *arcFleet) answer(i int, name string) string {
	f.t.Helper()
	got := answersA(f.srvs[i].Query(f.t, name, 1))
	if len(got) == 0 {
		return ""
	}
	return got[0]
}

// waitAnswers waits (up to 10 s) until every member's first A record for name is want.
func (f *arcFleet) waitAnswers(name, want string) {
	f.t.Helper()
	var got []string
	waitUntil(f.t, 10*time.Second, "every member answers "+name+" with "+want, func() bool {
		got = got[:0]
		for i := range f.srvs {
			got = append(got, f.answer(i, name))
		}
		return !slices.ContainsFunc(got, func(a string) bool { return a != want })
	}, func() string { return fmt.Sprint(got) })
}
