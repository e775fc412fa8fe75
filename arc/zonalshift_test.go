package arc

import (
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// svc is the managed resource of the zonal shift tests.
var svc = []Resource{{Name: "svc.example.org.", AZs: []string{"use1-az1", "use1-az2"}}}

// TestZonalShiftStartUpdateCancelAndExpiry drives a shift through the API with a
// clock the test moves: started, it is ACTIVE and weighs its AZ 0; updated, its
// expiry moves; past its expiry it is EXPIRED and the AZ weighs 1 again; it is
// cancelled early, and a new one starts.
func TestZonalShiftStartUpdateCancelAndExpiry(t *testing.T) {
	var skew atomic.Int64 // how far the test's clock is ahead of the real one
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	e := startWith(t, regions, Backend{Resources: func() []Resource { return svc }, Now: now})
	var z shiftDoc
	st, doc := e.call("arc-zonal-shift", http.MethodPost, "/zonalshifts", "", map[string]string{"awayFrom": "use1-az1", "comment": "drain",
		"expiresIn": "2m", "resourceIdentifier": "svc.example.org"}, &z)
	if st != http.StatusCreated || z.Status != "ACTIVE" || z.ResourceIdentifier != ResourceARN("svc.example.org.") || z.ExpiryTime-z.StartTime != 120 {
		t.Fatalf("StartZonalShift: %d %v %+v", st, doc, z)
	}
	if st, doc := e.call("arc-zonal-shift", http.MethodPost, "/zonalshifts", "", map[string]string{"awayFrom": "use1-az2", "comment": "",
		"expiresIn": "1h", "resourceIdentifier": ResourceARN("svc.example.org.")}, nil); st != http.StatusConflict || doc["reason"] != "ZonalShiftAlreadyExists" || doc["zonalShiftId"] != z.ZonalShiftID {
		t.Errorf("a second shift on the resource: %d %v, want 409 ZonalShiftAlreadyExists", st, doc)
	}
	var res struct {
		AppliedWeights map[string]float64
		ZonalShifts    []shiftDoc
	}
	path := "/managedresources/" + url.PathEscape(ResourceARN("svc.example.org."))
	e.call("arc-zonal-shift", http.MethodGet, path, "", nil, &res)
	if res.AppliedWeights["use1-az1"] != 0 || res.AppliedWeights["use1-az2"] != 1 || len(res.ZonalShifts) != 1 || res.ZonalShifts[0].AppliedStatus != "APPLIED" {
		t.Errorf("GetManagedResource during the shift: %+v", res)
	}
	var up shiftDoc
	if st, doc := e.call("arc-zonal-shift", http.MethodPatch, "/zonalshifts/"+z.ZonalShiftID, "", map[string]string{"expiresIn": "3h"}, &up); st != 200 || up.ExpiryTime-z.StartTime < 3*3600 {
		t.Fatalf("UpdateZonalShift 3h: %d %v %+v", st, doc, up)
	}
	skew.Store(int64(3*time.Hour + time.Minute))
	var list struct{ Items []shiftDoc }
	e.call("arc-zonal-shift", http.MethodGet, "/zonalshifts?status=EXPIRED", "", nil, &list)
	if len(list.Items) != 1 || list.Items[0].ZonalShiftID != z.ZonalShiftID {
		t.Errorf("ListZonalShifts status=EXPIRED past the expiry: %+v", list.Items)
	}
	e.call("arc-zonal-shift", http.MethodGet, path, "", nil, &res)
	if res.AppliedWeights["use1-az1"] != 1 || len(res.ZonalShifts) != 0 {
		t.Errorf("GetManagedResource past the expiry: %+v", res)
	}
	skew.Store(0)

	// The leader's clock decides changes: on it the shift is still active.
	var canceled shiftDoc
	if st, doc := e.call("arc-zonal-shift", http.MethodDelete, "/zonalshifts/"+z.ZonalShiftID, "", nil, &canceled); st != 200 || canceled.Status != "CANCELED" {
		t.Fatalf("CancelZonalShift: %d %v %+v", st, doc, canceled)
	}
	if st, doc := e.call("arc-zonal-shift", http.MethodDelete, "/zonalshifts/"+z.ZonalShiftID, "", nil, nil); st != http.StatusConflict || doc["reason"] != "ZonalShiftStatusNotActive" {
		t.Errorf("cancelling it again: %d %v, want 409 ZonalShiftStatusNotActive", st, doc)
	}
	var second shiftDoc
	if st, doc := e.call("arc-zonal-shift", http.MethodPost, "/zonalshifts", "", map[string]string{"awayFrom": "use1-az2", "comment": "again", "expiresIn": "72h",
		"resourceIdentifier": "svc.example.org."}, &second); st != http.StatusCreated || second.Status != "ACTIVE" {
		t.Fatalf("a new shift once the first is cancelled: %d %v %+v", st, doc, second)
	}
	if a := e.node.State().Audit; len(a) < 4 || a[len(a)-1].Token != testKeyID {
		t.Errorf("audit %+v, want every shift command by %s", a, testKeyID)
	}
}

func TestZonalShiftBadRequestsAnswerARCErrors(t *testing.T) {
	e := startWith(t, regions, Backend{Resources: func() []Resource { return svc }})
	for _, c := range []struct {
		method, path string
		in           any
		status       int
		typ, reason  string
	}{
		{"POST", "/zonalshifts", map[string]string{"awayFrom": "use1-az1", "comment": "", "expiresIn": "73h", "resourceIdentifier": "svc.example.org."}, 400, "ValidationException", "InvalidExpiresIn"},
		{"POST", "/zonalshifts", map[string]string{"awayFrom": "use1-az1", "comment": "", "expiresIn": "0m", "resourceIdentifier": "svc.example.org."}, 400, "ValidationException", "InvalidExpiresIn"},
		{"POST", "/zonalshifts", map[string]string{"awayFrom": "use1-az9", "comment": "", "expiresIn": "1h", "resourceIdentifier": "svc.example.org."}, 400, "ValidationException", "InvalidAz"},
		{"POST", "/zonalshifts", map[string]string{"awayFrom": "use1-az1", "comment": "", "expiresIn": "1h"}, 400, "ValidationException", "MissingValue"},
		{"POST", "/zonalshifts", map[string]string{"awayFrom": "use1-az1", "comment": "", "expiresIn": "1h", "resourceIdentifier": "other.example.org."}, 404, "ResourceNotFoundException", ""},
		{"POST", "/zonalshifts", "[", 400, "ValidationException", "MissingValue"},
		{"PATCH", "/zonalshifts/0000-nope", map[string]string{"expiresIn": "1h"}, 404, "ResourceNotFoundException", ""},
		{"PATCH", "/zonalshifts/0000-nope", map[string]string{}, 400, "ValidationException", "MissingValue"},
		{"GET", "/zonalshifts?status=DONE", nil, 400, "ValidationException", "InvalidStatus"},
		{"GET", "/zonalshifts?maxResults=101", nil, 400, "ValidationException", "MissingValue"},
		{"GET", "/managedresources/nothing.example.", nil, 404, "ResourceNotFoundException", ""},
		{"PUT", "/practiceruns", nil, 400, "UnknownOperationException", "MissingValue"},
	} {
		st, doc := e.call("arc-zonal-shift", c.method, c.path, "", c.in, nil)
		if st != c.status || doc["__type"] != c.typ || c.reason != "" && doc["reason"] != c.reason {
			t.Errorf("%s %s %v answered %d %v, want %d %s %s", c.method, c.path, c.in, st, doc, c.status, c.typ, c.reason)
		}
	}
	if len(e.node.State().Shifts) != 0 {
		t.Error("a refused request started a shift")
	}
}
