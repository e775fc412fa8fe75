package test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestARCConfigWithTheAWSCLI creates a control panel, routing controls and an
// assertion rule with the aws CLI through member 1; member 3 lists them beside
// the Corefile's and refuses, with ConflictException, a batch that breaks the
// new rule; the Corefile's panel cannot be deleted; the created ones survive
// SIGKILL of every member and are deleted again.
func TestARCConfigWithTheAWSCLI(t *testing.T) {
	f := newARCFleet(t)
	f.startAll(t)
	const cfgSvc = "route53-recovery-control-config"
	cluster := "arn:aws:route53-recovery-control::000000000000:cluster/healthroute"
	var panel struct {
		ControlPanel struct{ ControlPanelArn string }
	}
	var out string
	var err error
	waitUntil(t, 30*time.Second, "create-control-panel through member 1 is accepted (a leader elected)", func() bool {
		out, err = f.aws(0, cfgSvc, "create-control-panel", "--cluster-arn", cluster, "--control-panel-name", "web")
		return err == nil
	}, func() string { return out })
	f.decode(out, &panel)
	pa := panel.ControlPanel.ControlPanelArn
	var arns []string
	for _, n := range []string{"web-a", "web-b"} {
		var rc struct {
			RoutingControl struct{ RoutingControlArn string }
		}
		f.awsJSON(0, &rc, cfgSvc, "create-routing-control", "--cluster-arn", cluster, "--control-panel-arn", pa, "--routing-control-name", n)
		arns = append(arns, rc.RoutingControl.RoutingControlArn)
	}
	var rule struct {
		AssertionRule struct{ SafetyRuleArn string }
	}
	f.awsJSON(0, &rule, cfgSvc, "create-safety-rule", "--assertion-rule", fmt.Sprintf(
		`{"ControlPanelArn":%q,"Name":"web-one","WaitPeriodMs":0,"AssertedControls":[%q,%q],"RuleConfig":{"Type":"ATLEAST","Threshold":1,"Inverted":false}}`, pa, arns[0], arns[1]))

	// Members 2 and 3 read their own copies, which follow the leader's within the
	// documented second: wait until each has the rule, the last of the entries
	// above (entries apply in order), before reading or changing through them.
	for i := 1; i < len(f.srvs); i++ {
		waitUntil(t, 10*time.Second, fmt.Sprintf("member %d has the rule web-one", i+1), func() bool {
			out, err = f.aws(i, cfgSvc, "describe-safety-rule", "--safety-rule-arn", rule.AssertionRule.SafetyRuleArn)
			return err == nil
		}, func() string { return out })
	}
	var panels struct{ ControlPanels []struct{ Name string } }
	f.awsJSON(2, &panels, cfgSvc, "list-control-panels")
	if len(panels.ControlPanels) != 2 || panels.ControlPanels[0].Name != "healthroute" || panels.ControlPanels[1].Name != "web" {
		t.Errorf("list-control-panels through member 3: %+v", panels.ControlPanels)
	}
	both := fmt.Sprintf(`[{"RoutingControlArn":%q,"RoutingControlState":"Off"},{"RoutingControlArn":%q,"RoutingControlState":"Off"}]`, arns[0], arns[1])
	out, err = f.aws(2, "route53-recovery-cluster", "update-routing-control-states", "--update-routing-control-state-entries", both)
	if err == nil || !strings.Contains(out, "(ConflictException)") || !strings.Contains(out, "web-one") {
		t.Fatalf("both web controls off under web-one: %v\n%s\nwant ConflictException naming web-one", err, out)
	}
	out, err = f.aws(1, cfgSvc, "delete-control-panel", "--control-panel-arn", arcPanelARN)
	if err == nil || !strings.Contains(out, "ValidationException") || !strings.Contains(out, "Corefile") {
		t.Errorf("delete-control-panel of the Corefile's panel: %v\n%s", err, out)
	}

	f.awsJSON(1, nil, "route53-recovery-cluster", "update-routing-control-state", "--routing-control-arn", arns[0], "--routing-control-state", "Off")
	f.killAll()
	f.startAll(t)
	var got struct{ RoutingControlState string }
	waitUntil(t, 30*time.Second, "web-a reads Off through every member after SIGKILL of all", func() bool {
		for i := range f.srvs {
			if out, err := f.aws(i, "route53-recovery-cluster", "get-routing-control-state", "--routing-control-arn", arns[0]); err != nil || !strings.Contains(out, `"Off"`) {
				return false
			}
		}
		return true
	}, func() string { return "" })
	f.awsJSON(0, &got, "route53-recovery-cluster", "get-routing-control-state", "--routing-control-arn", arns[1])
	if got.RoutingControlState != "On" {
		t.Errorf("web-b after the restart: %+v", got)
	}
	waitUntil(t, 30*time.Second, "delete-safety-rule after the restart", func() bool {
		out, err = f.aws(1, cfgSvc, "delete-safety-rule", "--safety-rule-arn", rule.AssertionRule.SafetyRuleArn)
		return err == nil
	}, func() string { return out })
	for _, a := range arns {
		f.awsJSON(1, nil, cfgSvc, "delete-routing-control", "--routing-control-arn", a)
	}
	f.awsJSON(1, nil, cfgSvc, "delete-control-panel", "--control-panel-arn", pa)
	waitUntil(t, 10*time.Second, "describe-control-panel of the deleted panel through member 3: ResourceNotFoundException", func() bool {
		out, err = f.aws(2, cfgSvc, "describe-control-panel", "--control-panel-arn", pa)
		return err != nil && strings.Contains(out, "ResourceNotFoundException")
	}, func() string { return out })
}
