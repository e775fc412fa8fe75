package healthroute

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/routing"
)

// TestZonalShiftAnswersItsAZAsUnhealthy: while a zonal shift away from use1-az1
// is active, its record set's use1-az1 member answers as unhealthy (AZ-affinity
// falls back to the zone group), and explain says why; an expired or cancelled
// shift, or one of another record set, changes nothing.
func TestZonalShiftAnswersItsAZAsUnhealthy(t *testing.T) {
	records := strings.ReplaceAll(azRecords, "svc.example.org.", "shifted.example.org.")
	r, cfg := testResolver(t, "healthroute {\nlocation az use1-az1\n"+azChecks+records+"}")
	r.Publish(snapshot(cfg))
	t.Cleanup(func() { setZonalShifts(control.NewState()) })
	now := time.Now()
	for _, c := range []struct {
		what  string
		shift control.ZonalShift
		want  string
	}{
		{"no shift", control.ZonalShift{}, "192.0.2.1"},
		{"active", control.ZonalShift{Resource: "shifted.example.org.", AwayFrom: "use1-az1", Expiry: now.Add(time.Hour)}, "192.0.2.2"},
		{"expired", control.ZonalShift{Resource: "shifted.example.org.", AwayFrom: "use1-az1", Expiry: now.Add(-time.Second)}, "192.0.2.1"},
		{"cancelled", control.ZonalShift{Resource: "shifted.example.org.", AwayFrom: "use1-az1", Expiry: now.Add(time.Hour), Canceled: true}, "192.0.2.1"},
		{"another record set's", control.ZonalShift{Resource: "other.example.org.", AwayFrom: "use1-az1", Expiry: now.Add(time.Hour)}, "192.0.2.1"},
		{"another AZ", control.ZonalShift{Resource: "shifted.example.org.", AwayFrom: "use1-az2", Expiry: now.Add(time.Hour)}, "192.0.2.1"},
	} {
		st := control.NewState()
		if c.shift.Resource != "" {
			st.Shifts = []control.ZonalShift{c.shift}
		}
		setZonalShifts(st)
		if got, _ := ask(r, "shifted.example.org.", "198.51.100.1/32", routing.ClientLocation{}); got != c.want {
			t.Errorf("%s: answers %s, want %s", c.what, got, c.want)
		}
		_, tr := r.Explain(routing.Query{Name: "shifted.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix("198.51.100.1/32")})
		az1 := tr.Steps[0].Members[0]
		if shifted := c.want != "192.0.2.1"; az1.Healthy == shifted || shifted != strings.Contains(az1.Reason, "zonal shift") {
			t.Errorf("%s: explain says of use1-az1: healthy %t, %q", c.what, az1.Healthy, az1.Reason)
		}
	}
}
