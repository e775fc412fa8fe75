package health

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestObserve(t *testing.T) {
	tests := []struct {
		results       string // p = pass, f = fail
		fails, passes int
		want          string // Down after each result: u = up, d = down
	}{
		{"pppp", 3, 3, "uuuu"},
		{"ffff", 3, 3, "uudd"},
		{"ffpf", 3, 3, "uuuu"}, // a pass breaks the run
		{"fpp", 1, 1, "duu"},
		{"fppp", 1, 3, "dddu"}, // recovery threshold above the failure threshold
		{"fppfpp", 1, 2, "dduddu"},
		{"ffpfpp", 2, 2, "udddd" + "u"},
		{"ffpffpp", 2, 1, "uduudu" + "u"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d/%d", tc.results, tc.fails, tc.passes), func(t *testing.T) {
			var s State
			got := ""
			for _, r := range tc.results {
				s = s.Observe(r == 'p', tc.fails, tc.passes)
				if s.Down {
					got += "d"
				} else {
					got += "u"
				}
			}
			if got != tc.want {
				t.Errorf("states %s; want %s", got, tc.want)
			}
		})
	}
}

func TestSnapshotHealthy(t *testing.T) {
	up := &Spec{Name: "up", Type: HTTP, Target: "http://192.0.2.1"}
	down := &Spec{Name: "down", Type: HTTP, Target: "http://192.0.2.2"}
	unseen := &Spec{Name: "unseen", Type: HTTP, Target: "http://192.0.2.3"}
	inv := func(s *Spec) *Spec { c := *s; c.Invert = true; c.Seal(); return &c }
	dis := func(s *Spec) *Spec { c := *s; c.Disabled = true; c.Seal(); return &c }
	calc := func(n int, kids ...*Spec) *Spec {
		c := &Spec{Name: "calc", Type: Calculated, Children: kids, Threshold: n}
		c.Seal()
		return c
	}
	for _, s := range []*Spec{up, down, unseen} {
		s.Seal()
	}
	snap := NewSnapshot(1, map[string]Status{
		up.Fingerprint():   {Seen: true},
		down.Fingerprint(): {Seen: true, Down: true},
	})
	tests := []struct {
		name       string
		spec       *Spec
		want, seen bool
	}{
		{"up", up, true, true},
		{"down", down, false, true},
		{"new check is healthy", unseen, true, false},
		{"new inverted check is unhealthy", inv(unseen), false, false},
		{"inverted up", inv(up), false, true},
		{"inverted down", inv(down), true, true},
		{"disabled down", dis(down), true, true},
		{"disabled and inverted", inv(dis(up)), false, true},
		{"calculated 1 of up, down", calc(1, up, down), true, true},
		{"calculated 2 of up, down", calc(2, up, down), false, true},
		{"calculated 0: always healthy", calc(0, down, down), true, true},
		{"calculated above children: never", calc(3, up, up), false, true},
		{"disabled child counts healthy", calc(2, up, dis(down)), true, true},
		{"inverted child counts inverted", calc(2, up, inv(down)), true, true},
		{"inverted up child counts unhealthy", calc(2, down, inv(up)), false, true},
		{"nested calculated", calc(2, up, calc(1, down, up)), true, true},
		{"nested, not seen", calc(1, up, calc(1, unseen)), true, false},
		{"inverted calculated", inv(calc(1, down)), true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := snap.Healthy(tc.spec); got != tc.want {
				t.Errorf("Healthy = %t; want %t", got, tc.want)
			}
			if got := snap.Seen(tc.spec); got != tc.seen {
				t.Errorf("Seen = %t; want %t", got, tc.seen)
			}
		})
	}
	var nilSnap *Snapshot
	if !nilSnap.Healthy(up) || nilSnap.Len() != 0 {
		t.Error("a nil snapshot must read every check as new and healthy")
	}
	if snap.Len() != 2 {
		t.Errorf("Len = %d; want 2", snap.Len())
	}
}

func TestSnapshotDiff(t *testing.T) {
	a := NewSnapshot(1, map[string]Status{"x": {Seen: true}, "y": {Seen: true}, "z": {Seen: true}})
	tests := []struct {
		name      string
		prev, cur *Snapshot
		want      string
	}{
		{"same", a, a, ""},
		{"equal content", a, NewSnapshot(2, map[string]Status{"x": {Seen: true}, "y": {Seen: true}, "z": {Seen: true}}), ""},
		{"from nil", nil, a, "xyz"},
		{"to nil", a, nil, "xyz"},
		{"changed, added, removed", a, NewSnapshot(2, map[string]Status{"x": {Seen: true, Down: true}, "y": {Seen: true}, "w": {}}), "wxz"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			tc.cur.Diff(tc.prev, func(fp string) { got = append(got, fp) })
			slices.Sort(got)
			if s := strings.Join(got, ""); s != tc.want {
				t.Errorf("Diff = %q; want %q", s, tc.want)
			}
		})
	}
}
