package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestRoute53APIDocsCLIExample runs docs/route53-api.md's aws CLI example, word
// for word but for the ports, against the Corefile of the page's Syntax section
// (its key file's path made absolute): it lists the zone's SOA and
// static.example.org.
func TestRoute53APIDocsCLIExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "route53-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	var corefile, command string
	for _, m := range regexp.MustCompile("(?s)~~~ corefile\n(.*?)~~~").FindAllSubmatch(b, -1) {
		if strings.Contains(string(m[1]), "static.example.org.") {
			corefile = string(m[1])
		}
	}
	for _, m := range regexp.MustCompile("(?s)~~~ sh\n(.*?)~~~").FindAllSubmatch(b, -1) {
		if strings.Contains(string(m[1]), "aws route53 list-resource-record-sets") {
			command = strings.TrimSpace(string(m[1]))
		}
	}
	if corefile == "" || command == "" || !strings.Contains(corefile, "example.org {") || !strings.Contains(command, "127.0.0.1:8054") {
		t.Fatalf("docs/route53-api.md has no Corefile with static.example.org. on example.org, or no aws route53 list-resource-record-sets command on 127.0.0.1:8054 in a ~~~ sh block")
	}
	keys, err := filepath.Abs(filepath.Join("..", "examples", "route53-api", "route53.keys"))
	if err != nil {
		t.Fatal(err)
	}
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	api := fmt.Sprintf("127.0.0.1:%d", apiPort)
	corefile = strings.NewReplacer("example.org {", fmt.Sprintf("example.org:%d {\n    bind 127.0.0.1", port), "127.0.0.1:8054", api,
		"examples/route53-api/route53.keys", keys).Replace(corefile)
	coretest.Start(t, corefile, port, "example.org")

	command = strings.ReplaceAll(command, "127.0.0.1:8054", api)
	command = strings.Replace(command, "aws route53 ", "/usr/bin/aws route53 ", 1)
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER="}
	cmd.Dir = home
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the docs' command: %v\n%s", err, out)
	}
	var list struct{ ResourceRecordSets []struct{ Name, Type string } }
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("the docs' command printed no JSON: %v\n%s", err, out)
	}
	var got []string
	for _, rs := range list.ResourceRecordSets {
		got = append(got, rs.Name+" "+rs.Type)
	}
	if strings.Join(got, ", ") != "example.org. SOA, static.example.org. A" {
		t.Errorf("the docs' command lists %q, want the SOA and static.example.org. A", got)
	}
}
