package client

import "testing"

func TestHeartbeat(t *testing.T) {
	// Steps: "d" a heartbeat is due (next ID), "p<id>" a pong for id, "x" an
	// invalid reply. want is the step at which the connection closes (-1: never).
	for _, tc := range []struct {
		name  string
		steps []string
		want  int
	}{
		{"answered", []string{"d", "p1", "d", "p2", "d", "p3", "d"}, -1},
		{"two missing", []string{"d", "d", "d"}, 2},
		{"one missing then answered", []string{"d", "d", "p2", "d", "d", "p4"}, -1},
		{"two invalid", []string{"d", "x", "d", "x"}, 3},
		{"missing then invalid", []string{"d", "d", "x"}, 2},
		{"invalid then missing", []string{"d", "x", "d", "d"}, 3},
		{"late pong is ignored, not counted", []string{"d", "d", "p1", "p2", "d", "p3"}, -1},
		{"late pong does not answer the next", []string{"d", "d", "p1", "d"}, 3},
		{"pong for an unsent heartbeat is invalid", []string{"d", "p7", "d", "p9"}, 3},
		{"invalid reply with nothing outstanding counts", []string{"x", "d", "d"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := heartbeat{max: 2}
			var id uint64
			got := -1
			for i, s := range tc.steps {
				ok := true
				switch s[0] {
				case 'd':
					id++
					ok = h.due(id)
				case 'p':
					var n uint64
					for _, c := range s[1:] {
						n = n*10 + uint64(c-'0')
					}
					ok = h.pong(n)
				case 'x':
					ok = h.invalid()
				}
				if !ok {
					got = i
					break
				}
			}
			if got != tc.want {
				t.Errorf("closed at step %d, want %d (steps %v)", got, tc.want, tc.steps)
			}
		})
	}
}
