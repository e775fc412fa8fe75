package fleet

import "testing"

func dumpMembers(t *testing.T, ms []*Fleet) {
	for _, m := range ms {
		t.Logf("%s: %d", m.Name(), len(m.Members()))
	}
}
