package healthroute

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestControlsParseErrors(t *testing.T) {
	key := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(key, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkParseErrors(t, []parseErrorCase{
		{"unknown control in a rule", `healthroute {
	check east control
	controls {
		assertion one 1 east north
	}
}`, 4, "rule one: unknown control 'north', expected a check of type control"},
		{"gating cycle", `healthroute {
	check a control
	check b control
	controls {
		gating ab a b
		gating ba b a
	}
}`, 4, "gating rules form a cycle: a -> b -> a"},
		{"assertion count out of range", `healthroute {
	check east control
	controls {
		assertion one 2 east
	}
}`, 4, "invalid count '2', expected a number from 0 to 1"},
		{"control with a target", `healthroute {
	check east control http://192.0.2.1/
}`, 2, "a control takes no target"},
		{"control with a probe option", `healthroute {
	check east control {
		interval 1s
	}
}`, 3, "interval does not apply to control checks"},
		{"rule defined twice", `healthroute {
	check east control
	controls {
		wait settle 5s east
		wait settle 6s east
	}
}`, 5, "rule settle is defined twice (first at line 4)"},
		{"fleet without voters", fmt.Sprintf(`healthroute {
	fleet {
		bind 127.0.0.1:7946
		join 127.0.0.1:7956
		name a
		key_file %s
	}
	check east control
}`, key), 8, "control checks in a fleet need a controls block listing the voters"},
		{"member not among the voters", fmt.Sprintf(`healthroute {
	fleet {
		join 127.0.0.1:7956
		name a
		key_file %s
	}
	check east control
	controls {
		voters b=127.0.0.1:7957 c=127.0.0.1:7958
	}
}`, key), 8, "this member (a) is not listed"},
		{"open control port without a key", `healthroute {
	check east control
	controls {
		bind 0.0.0.0:7947
	}
}`, 3, "is not a loopback address and there is no fleet key_file"},
		{"bad voter", `healthroute {
	check east control
	controls {
		voters a
	}
}`, 4, "expected NAME=ADDRESS:PORT"},
	})
}
