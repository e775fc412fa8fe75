package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestARCClusterRunbookWithTheAWSCLI runs an ARC runbook unchanged with the aws
// CLI against three members: east turned off through member 1 reads Off through
// member 3 and moves every member's answers; a batch breaking the assertion rule
// is refused with ARC's ConflictException; the same batch with
// --safety-rules-to-override is applied and audited; and it all survives SIGKILL
// of every member.
func TestARCClusterRunbookWithTheAWSCLI(t *testing.T) {
	f := newARCFleet(t)
	f.startAll(t)
	var out string
	var err error
	waitUntil(t, 30*time.Second, "a change through member 1 is accepted (a leader elected)", func() bool {
		out, err = f.aws(0, "route53-recovery-cluster", "update-routing-control-state",
			"--routing-control-arn", arcEastARN, "--routing-control-state", "Off")
		return err == nil
	}, func() string { return out })
	// Member 3 reads its own copy, which follows the leader's within the documented
	// second (each aws CLI call takes a few hundred ms, hence the longer deadline).
	waitUntil(t, 10*time.Second, "east through member 3 reads Off", func() bool { return f.controlState(2, arcEastARN) == "Off" }, func() string { return "" })
	f.waitAnswers("www.example.org", ctlSecondary)

	var list struct {
		RoutingControls []struct{ RoutingControlArn, RoutingControlName, RoutingControlState, ControlPanelArn string }
	}
	f.awsJSON(1, &list, "route53-recovery-cluster", "list-routing-controls", "--control-panel-arn", arcPanelARN)
	if len(list.RoutingControls) != 2 || list.RoutingControls[0].RoutingControlArn != arcEastARN ||
		list.RoutingControls[0].RoutingControlState != "Off" || list.RoutingControls[1].RoutingControlState != "On" {
		t.Errorf("list-routing-controls through member 2: %+v, want east Off, west On", list.RoutingControls)
	}

	entries := fmt.Sprintf(`[{"RoutingControlArn":%q,"RoutingControlState":"On"},{"RoutingControlArn":%q,"RoutingControlState":"Off"}]`, arcEastARN, arcWestARN)
	out, err = f.aws(1, "route53-recovery-cluster", "update-routing-control-states", "--update-routing-control-state-entries", entries)
	if err != nil {
		t.Fatalf("east On, west Off (holds the rule) through member 2: %v\n%s", err, out)
	}
	both := fmt.Sprintf(`[{"RoutingControlArn":%q,"RoutingControlState":"Off"},{"RoutingControlArn":%q,"RoutingControlState":"Off"}]`, arcEastARN, arcWestARN)
	out, err = f.aws(0, "route53-recovery-cluster", "update-routing-control-states", "--update-routing-control-state-entries", both)
	if err == nil || !strings.Contains(out, "(ConflictException)") || !strings.Contains(out, "one-region") {
		t.Fatalf("a batch turning both regions off: %v\n%s\nwant ConflictException naming one-region", err, out)
	}
	// east On reaches member 3 and stays: the refused batch changed nothing.
	waitUntil(t, 10*time.Second, "member 3 reads east On (the refused batch did not turn it off)", func() bool { return f.controlState(2, arcEastARN) == "On" }, func() string { return "" })
	f.awsJSON(0, nil, "route53-recovery-cluster", "update-routing-control-states", "--update-routing-control-state-entries", both,
		"--safety-rules-to-override", arcRuleARN)
	for i := range f.srvs {
		waitUntil(t, 10*time.Second, fmt.Sprintf("member %d reads both Off", i+1), func() bool {
			return f.controlState(i, arcEastARN) == "Off" && f.controlState(i, arcWestARN) == "Off"
		}, func() string { return "" })
	}
	audit := f.auditTail(2)
	if len(audit.BreakGlass) != 1 || audit.BreakGlass[0] != "one-region" || audit.Token != r53KeyID {
		t.Errorf("the audit's last entry %+v, want the override of one-region by %s", audit, r53KeyID)
	}

	// A member refuses to start on a state that breaks its rules: west back on.
	f.awsJSON(2, nil, "route53-recovery-cluster", "update-routing-control-state", "--routing-control-arn", arcWestARN, "--routing-control-state", "On")
	f.waitAnswers("www.example.org", ctlSecondary)

	f.killAll()
	f.startAll(t)
	for i := range f.srvs {
		if got := f.answer(i, "www.example.org"); got != ctlSecondary {
			t.Errorf("member %d answers %s from its first query after SIGKILL, want the secondary (east Off)", i+1, got)
		}
		if got := f.controlState(i, arcEastARN); got != "Off" {
			t.Errorf("east through member %d after SIGKILL of all: %s, want Off", i+1, got)
		}
	}
	out, err = f.aws(2, "route53-recovery-cluster", "update-routing-control-state", "--routing-control-arn", arcEastARN, "--routing-control-state", "On")
	for deadline := time.Now().Add(30 * time.Second); err != nil && strings.Contains(out, "EndpointTemporarilyUnavailable") && time.Now().Before(deadline); {
		out, err = f.aws(2, "route53-recovery-cluster", "update-routing-control-state", "--routing-control-arn", arcEastARN, "--routing-control-state", "On")
	}
	if err != nil {
		t.Fatalf("east On through member 3 after the restart: %v\n%s", err, out)
	}
}

// auditEntry is what the tests read of an audit entry.
type auditEntry struct {
	Token, Member, Reason, Refused string
	BreakGlass                     []string `json:"break_glass"`
}

// auditTail returns the last audit entry as member i has applied it, from its
// data directory's state file, once it records a break-glass.
func (f *arcFleet) auditTail(i int) auditEntry {
	f.t.Helper()
	var st struct{ Audit []auditEntry }
	path := filepath.Join(f.dir, fmt.Sprintf("state-%d", i), "state.json")
	waitUntil(f.t, 10*time.Second, "the state file's last audit entry is a break-glass", func() bool {
		b, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(b, &st) == nil && len(st.Audit) > 0 && len(st.Audit[len(st.Audit)-1].BreakGlass) > 0
	}, func() string { return fmt.Sprintf("%+v", st.Audit) })
	return st.Audit[len(st.Audit)-1]
}
