package test

import (
	"strings"
	"testing"
	"time"
)

const (
	arcSvcAZ1    = "192.0.2.11"
	arcSvcGlobal = "192.0.2.99"
)

// zonalShiftOut is what the aws CLI prints of a zonal shift.
type zonalShiftOut struct {
	ZonalShiftID string `json:"zonalShiftId"`
	Status       string `json:"status"`
	ExpiryTime   string `json:"expiryTime"`
}

func (z zonalShiftOut) expiry(t *testing.T) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, z.ExpiryTime)
	if err != nil {
		t.Fatalf("expiryTime %q: %v", z.ExpiryTime, err)
	}
	return at
}

// TestARCZonalShiftWithTheAWSCLI shifts svc.example.org away from use1-az1 with
// the real aws CLI through member 1: every member falls back to the global
// answer; update-zonal-shift extends it; it survives SIGKILL of every member; cut
// to a minute, it ends by itself at its expiry; a new shift ends early with
// cancel-zonal-shift.
func TestARCZonalShiftWithTheAWSCLI(t *testing.T) {
	f := newARCFleet(t)
	f.startAll(t)
	f.waitAnswers("svc.example.org", arcSvcAZ1)
	var res struct {
		Items []struct {
			Arn, Name         string
			AvailabilityZones []string
		} `json:"items"`
	}
	f.awsJSON(1, &res, "arc-zonal-shift", "list-managed-resources")
	if len(res.Items) != 1 || res.Items[0].Name != "svc.example.org." || strings.Join(res.Items[0].AvailabilityZones, " ") != "use1-az1 use1-az2" {
		t.Fatalf("list-managed-resources: %+v, want svc.example.org. in use1-az1 and use1-az2", res.Items)
	}
	var z zonalShiftOut
	var out string
	var err error
	waitUntil(t, 30*time.Second, "start-zonal-shift through member 1 is accepted (a leader elected)", func() bool {
		out, err = f.aws(0, "arc-zonal-shift", "start-zonal-shift", "--resource-identifier", res.Items[0].Arn,
			"--away-from", "use1-az1", "--expires-in", "2m", "--comment", "drain use1-az1")
		return err == nil
	}, func() string { return out })
	f.decode(out, &z)
	if z.Status != "ACTIVE" {
		t.Fatalf("start-zonal-shift: %s", out)
	}
	f.waitAnswers("svc.example.org", arcSvcGlobal)
	var got struct {
		AppliedWeights map[string]float64 `json:"appliedWeights"`
	}
	f.awsJSON(2, &got, "arc-zonal-shift", "get-managed-resource", "--resource-identifier", res.Items[0].Arn)
	if got.AppliedWeights["use1-az1"] != 0 || got.AppliedWeights["use1-az2"] != 1 {
		t.Errorf("get-managed-resource through member 3: %+v, want use1-az1 weighed 0", got)
	}

	var longer zonalShiftOut
	f.awsJSON(1, &longer, "arc-zonal-shift", "update-zonal-shift", "--zonal-shift-id", z.ZonalShiftID, "--expires-in", "3h")
	if !longer.expiry(t).After(z.expiry(t).Add(2 * time.Hour)) {
		t.Fatalf("update-zonal-shift --expires-in 3h: expiry %s, was %s", longer.ExpiryTime, z.ExpiryTime)
	}

	f.killAll()
	f.startAll(t)
	for i := range f.srvs {
		if a := f.answer(i, "svc.example.org"); a != arcSvcGlobal {
			t.Errorf("member %d answers %s from its first query after SIGKILL of all, want the shift to hold (%s)", i+1, a, arcSvcGlobal)
		}
	}

	var short zonalShiftOut
	waitUntil(t, 30*time.Second, "update-zonal-shift through member 3 after the restart", func() bool {
		out, err = f.aws(2, "arc-zonal-shift", "update-zonal-shift", "--zonal-shift-id", z.ZonalShiftID, "--expires-in", "1m")
		return err == nil
	}, func() string { return out })
	f.decode(out, &short)
	start := time.Now()
	waitUntil(t, 90*time.Second, "the shift ends by itself at its expiry on every member", func() bool {
		for i := range f.srvs {
			if f.answer(i, "svc.example.org") != arcSvcAZ1 {
				return false
			}
		}
		return true
	}, func() string { return short.ExpiryTime })
	if took := time.Since(start); took < 40*time.Second {
		t.Errorf("the one-minute shift ended after %s", took)
	}
	var expired struct {
		Items []zonalShiftOut `json:"items"`
	}
	f.awsJSON(0, &expired, "arc-zonal-shift", "list-zonal-shifts", "--status", "EXPIRED")
	if len(expired.Items) != 1 || expired.Items[0].ZonalShiftID != z.ZonalShiftID {
		t.Errorf("list-zonal-shifts --status EXPIRED: %+v", expired.Items)
	}

	var again, canceled zonalShiftOut
	f.awsJSON(1, &again, "arc-zonal-shift", "start-zonal-shift", "--resource-identifier", "svc.example.org.",
		"--away-from", "use1-az1", "--expires-in", "1h", "--comment", "again")
	f.waitAnswers("svc.example.org", arcSvcGlobal)
	f.awsJSON(2, &canceled, "arc-zonal-shift", "cancel-zonal-shift", "--zonal-shift-id", again.ZonalShiftID)
	if canceled.Status != "CANCELED" {
		t.Errorf("cancel-zonal-shift: %+v", canceled)
	}
	f.waitAnswers("svc.example.org", arcSvcAZ1)
	out, err = f.aws(0, "arc-zonal-shift", "start-zonal-shift", "--resource-identifier", "svc.example.org.",
		"--away-from", "use1-az1", "--expires-in", "4d", "--comment", "too long")
	if err == nil || !strings.Contains(out, "ValidationException") {
		t.Errorf("start-zonal-shift --expires-in 4d: %v\n%s\nwant ValidationException", err, out)
	}
}
