package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

var (
	importBinOnce sync.Once
	importBin     string
	importBinErr  error
)

// importCommand builds the command once per test binary and returns its path.
func importCommand(t *testing.T) string {
	t.Helper()
	importBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "healthroute-import")
		if err != nil {
			importBinErr = err
			return
		}
		importBin = filepath.Join(dir, "healthroute-import")
		out, err := exec.Command("go", "build", "-o", importBin, ".").CombinedOutput()
		if err != nil {
			importBinErr = errors.New(string(out))
		}
	})
	if importBinErr != nil {
		t.Fatalf("go build: %v", importBinErr)
	}
	return importBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if importBin != "" {
		os.RemoveAll(filepath.Dir(importBin))
	}
	os.Exit(code)
}

// runImport runs the built command and returns its stdout, stderr and exit code.
func runImport(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(importCommand(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", "", 0
}

// TestReadmeExample runs the command of docs/route53.md's import example on the
// fixture files it names and checks that it prints the lines of the Corefile shown
// there and the warnings shown after it.
func TestReadmeExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/route53.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := [][]byte{b, b}
	m := regexp.MustCompile("(?s)\ngo run ./cmd/healthroute-import ([^\n]*)\n~~~.*?~~~ corefile\n[^\n]*\n    healthroute [^\n]*\n(.*?)\n    }\n}\n~~~.*?~~~\n(.*?)~~~").FindSubmatch(sec[1])
	if m == nil {
		t.Fatal("docs/route53.md has no command, Corefile and warnings example")
	}
	args := strings.Fields(string(m[1]))
	for i, a := range args {
		switch a {
		case "rrsets.json":
			args[i] = "../../route53/testdata/readme.records.json"
		case "checks.json":
			args[i] = "../../route53/testdata/readme.checks.json"
		}
	}
	var want strings.Builder
	for _, l := range strings.Split(string(m[2]), "\n") {
		want.WriteString(strings.TrimPrefix(l, "        ") + "\n")
	}
	stdout, stderr, code := runImport(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != want.String() {
		t.Errorf("stdout:\n%s\nREADME shows:\n%s", stdout, want.String())
	}
	if stderr != string(m[3]) {
		t.Errorf("stderr:\n%s\nREADME shows:\n%s", stderr, m[3])
	}
}

func writeImportFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExitCodes checks that a zone that cannot be converted (or a file over the size
// limit) prints nothing on stdout and exits 1 naming the record set (the file), and
// that bad usage exits 2.
func TestExitCodes(t *testing.T) {
	bad := writeImportFile(t, "rrsets.json", `{"ResourceRecordSets":[
		{"Name":"example.com.","Type":"A","TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]},
		{"Name":"www.example.com.","Type":"A","SetIdentifier":"blue","Weight":1,"TTL":60,"ResourceRecords":[{"Value":"192.0.2.2"}],"HealthCheckId":"gone"}]}`)
	big := writeImportFile(t, "big.json", `{"ResourceRecordSets":[`+strings.Repeat(" ", 2000)+`]}`)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unconvertible", []string{"-records", bad, "-zone", "example.com"}, 1, `record set www.example.com. A ("blue"): health check gone is not among the health checks read`},
		{"missing file", []string{"-records", filepath.Join(t.TempDir(), "none.json"), "-zone", "example.com"}, 1, "no such file"},
		{"no records", []string{"-zone", "example.com"}, 2, "usage: healthroute-import"},
		{"unknown flag", []string{"-records", bad, "-bogus"}, 2, "flag provided but not defined"},
		{"over -max-file-size", []string{"-records", big, "-max-file-size", "1K"}, 1, big + " is over the size limit of 1024 bytes"},
		{"bad -max-file-size", []string{"-records", bad, "-max-file-size", "1X"}, 2, `-max-file-size: invalid value "1X"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runImport(t, tc.args...)
			if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, no stdout, stderr containing %q", code, stdout, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// TestRecordsFromStdin checks that -records - reads standard input.
func TestRecordsFromStdin(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(importCommand(t), "-records", "-")
	cmd.Stdin = strings.NewReader(`{"ResourceRecordSets":[
		{"Name":"example.com.","Type":"SOA","TTL":900,"ResourceRecords":[{"Value":"ns1.example.com. hostmaster.example.com. 1 7200 900 1209600 86400"}]},
		{"Name":"www.example.com.","Type":"A","TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]}`)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if want := "record www.example.com. simple {\n    ttl 60\n    A 192.0.2.1\n}\n"; stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
}

// TestCIDRCollections checks that -cidr ID=FILE serves the record sets of that
// collection and a file without an ID serves the others.
func TestCIDRCollections(t *testing.T) {
	rrsets := writeImportFile(t, "rrsets.json", `{"ResourceRecordSets":[
		{"Name":"a.example.com.","Type":"A","SetIdentifier":"x","CidrRoutingConfig":{"CollectionId":"c1","LocationName":"lab"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]},
		{"Name":"b.example.com.","Type":"A","SetIdentifier":"x","CidrRoutingConfig":{"CollectionId":"c2","LocationName":"lab"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.2"}]}]}`)
	c1 := writeImportFile(t, "c1.json", `{"CidrBlocks":[{"CidrBlock":"198.51.100.0/24","LocationName":"lab"}]}`)
	other := writeImportFile(t, "other.json", `{"CidrBlocks":[{"CidrBlock":"203.0.113.0/24","LocationName":"lab"}]}`)
	stdout, stderr, code := runImport(t, "-records", rrsets, "-zone", "example.com.", "-cidr", "c1="+c1, "-cidr", other)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"record a.example.com. ip {\n    ttl 60\n    cidr 198.51.100.0/24 A 192.0.2.1 id x\n}\n",
		"record b.example.com. ip {\n    ttl 60\n    cidr 203.0.113.0/24 A 192.0.2.2 id x\n}\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout:\n%s\nwant it to contain:\n%s", stdout, want)
		}
	}
}
