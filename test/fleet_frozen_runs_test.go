package test

import (
	"os"
	"strconv"
	"testing"
)

// frozenRunsEnv sets how many times TestFleetFrozenMember runs in a row (a run
// takes about 30 s); by default 3, which fits CI's budget of about two minutes.
const frozenRunsEnv = "HEALTHROUTE_FROZEN_RUNS"

func frozenRuns(t *testing.T) int {
	v := os.Getenv(frozenRunsEnv)
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: expected a number of runs", frozenRunsEnv, v)
	}
	return n
}
