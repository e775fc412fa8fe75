package health

import "testing"

// TestJudgeOverrides holds Judge's documented order where overrides take part: an
// override wins over the probes, disabled and invert alike, and an override of a
// child reaches its calculated parent, which still applies its own invert.
func TestJudgeOverrides(t *testing.T) {
	seal := func(s *Spec) *Spec { s.Seal(); return s }
	up := seal(&Spec{Name: "up", Type: HTTP, Target: "http://192.0.2.1"})
	down := seal(&Spec{Name: "down", Type: HTTP, Target: "http://192.0.2.2"})
	invDown := seal(&Spec{Name: "inv", Type: HTTP, Target: "http://192.0.2.2", Invert: true})
	disabled := seal(&Spec{Name: "dis", Type: HTTP, Target: "http://192.0.2.3", Disabled: true})
	both := seal(&Spec{Name: "calc", Type: Calculated, Children: []*Spec{up, down}, Threshold: 2})
	invBoth := seal(&Spec{Name: "icalc", Type: Calculated, Children: []*Spec{up, down}, Threshold: 2, Invert: true})
	snap := NewSnapshot(1, map[string]Status{
		up.Fingerprint():   {Seen: true},
		down.Fingerprint(): {Seen: true, Down: true},
	})
	tests := []struct {
		name string
		spec *Spec
		over map[string]bool
		want bool
	}{
		{"no override: the probes", down, nil, false},
		{"forced healthy over failing probes", down, map[string]bool{"down": true}, true},
		{"forced unhealthy over passing probes", up, map[string]bool{"up": false}, false},
		{"an override is not inverted", invDown, map[string]bool{"inv": false}, false},
		{"inverted, no override", invDown, nil, true},
		{"an override beats disabled", disabled, map[string]bool{"dis": false}, false},
		{"another check's override changes nothing", down, map[string]bool{"up": true}, false},
		{"calculated: a child's override counts", both, map[string]bool{"down": true}, true},
		{"calculated: without it, 1 of 2", both, nil, false},
		{"calculated: its own override wins", both, map[string]bool{"down": true, "calc": false}, false},
		{"inverted calculated: invert applies after the children's overrides", invBoth, map[string]bool{"down": true}, false},
	}
	for _, tc := range tests {
		if got := snap.Judge(tc.spec, tc.over); got != tc.want {
			t.Errorf("%s: Judge = %t, want %t", tc.name, got, tc.want)
		}
	}
}
