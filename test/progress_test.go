package test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// progressLines runs scripts/progress with args, heartbeat every `every` seconds, and
// returns its output lines with when each arrived, and its exit status.
func progressLines(t *testing.T, every string, args ...string) (lines []string, gaps []time.Duration, status int) {
	t.Helper()
	cmd := exec.Command("../scripts/progress", args...)
	cmd.Env = append(os.Environ(), "PROGRESS_EVERY="+every)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	last := time.Now()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		gaps = append(gaps, time.Since(last))
		last = time.Now()
	}
	gaps = append(gaps, time.Since(last))
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return lines, gaps, exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return lines, gaps, 0
}

// TestProgressNeverSilent: scripts/progress, which every long step of make run,
// make test and make own-build runs under, prints a line naming its label and the
// time so far at every interval while a silent command runs (here each second; 30 s
// by default, half the 60 s the project allows without output), keeps the command's
// exit status, and in -packages mode counts go build -v's package lines while
// passing errors through. The Makefile and scripts use it for each such step.
func TestProgressNeverSilent(t *testing.T) {
	// 4.5 s: three beats are due at about 1, 2 and 3 s, each a little later than the
	// one before (a sleep, then a date), so the margin holds on a loaded machine.
	lines, gaps, status := progressLines(t, "1", "quiet step", "sh", "-c", "sleep 4.5; echo done; exit 3")
	if status != 3 {
		t.Errorf("exit status %d, want the command's 3", status)
	}
	beat := regexp.MustCompile(`^quiet step: still running, \d+ s so far$`)
	beats, done := 0, -1
	for i, l := range lines {
		switch {
		case beat.MatchString(l) && done < 0:
			beats++
		case l == "done" && done < 0:
			done = i
		case !beat.MatchString(l): // a beat may still come between the command's end and its own
			t.Errorf("line %d of %q: neither a heartbeat nor the command's output", i, lines)
		}
	}
	if beats < 3 || done < 0 {
		t.Errorf("output %q: want at least 3 heartbeat lines naming the step, then the command's own", lines)
	}
	for i, g := range gaps {
		if g > 2*time.Second {
			t.Errorf("%v without output before line %d of %q (heartbeat every 1 s)", g, i, lines)
		}
	}

	lines, _, status = progressLines(t, "30", "-packages", "make build", "sh", "-c",
		`for i in $(seq 60); do echo github.com/x/p$i; done; echo "# github.com/x/y"; echo "y.go:1:2: undefined: z"; exit 1`)
	want := []string{
		"make build: 1 packages compiled (github.com/x/p1)",
		"make build: 25 packages compiled (github.com/x/p25)",
		"make build: 50 packages compiled (github.com/x/p50)",
		"# github.com/x/y",
		"y.go:1:2: undefined: z",
		"make build: 60 packages compiled in all",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") || status != 1 {
		t.Errorf("-packages output %q, status %d; want %q, status 1", lines, status, want)
	}

	for file, uses := range map[string][]string{
		"../Makefile":          {`./scripts/progress -packages "make build" $(GO) build -v -o coredns ./cmd/coredns`, `./scripts/progress "go vet ./..." $(GO) vet ./...`, `./scripts/progress "fuzz" ./scripts/fuzz`},
		"../scripts/test":      {`"$progress" "== $1" "$GO" test -race`, `"$progress" "== fleet (fake clock)" "$GO" test`},
		"../scripts/own-build": {`"$progress" -packages "own-build: go build" "$GO" build -v`, `"$progress" "own-build: go mod tidy"`},
		"../scripts/test-deps": {`"$progress" "test-deps: apt-get install"`, `"$progress" "test-deps: go mod download" go mod download`},
		"../scripts/progress":  {`every=${PROGRESS_EVERY:-30}`},
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range uses {
			if !strings.Contains(string(b), u) {
				t.Errorf("%s does not run %s", file, u)
			}
		}
	}
}
