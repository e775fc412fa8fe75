package healthroute

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWebhookParse: webhook takes an http(s) URL and a required secret_file of at
// least 16 characters; anything else is refused naming the line.
func TestWebhookParse(t *testing.T) {
	dir := t.TempDir()
	good, short := filepath.Join(dir, "secret"), filepath.Join(dir, "short")
	if err := os.WriteFile(good, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("tiny"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := mustParse(t, "healthroute example.org {\nwebhook https://hooks.example/healthroute {\nsecret_file "+good+"\n}\n}")
	if w := cfg.Webhook; w == nil || w.URL != "https://hooks.example/healthroute" || string(w.Secret) != "0123456789abcdef0123" {
		t.Fatalf("webhook parsed as %+v", cfg.Webhook)
	}
	checkParseErrors(t, []parseErrorCase{
		{"no secret", "healthroute example.org {\nwebhook http://127.0.0.1:9/\n}", 2, "secret_file is required"},
		{"short secret", "healthroute example.org {\nwebhook http://127.0.0.1:9/ {\nsecret_file " + short + "\n}\n}", 3, "expected at least 16"},
		{"scheme", "healthroute example.org {\nwebhook ftp://127.0.0.1/ {\nsecret_file " + good + "\n}\n}", 2, "expected http:// or https://"},
		{"twice", "healthroute example.org {\nwebhook http://127.0.0.1:9/ {\nsecret_file " + good + "\n}\nwebhook http://127.0.0.1:9/ {\nsecret_file " + good + "\n}\n}", 5, "webhook"},
		{"unknown", "healthroute example.org {\nwebhook http://127.0.0.1:9/ {\nsecret " + good + "\n}\n}", 3, "webhook: unknown property 'secret'"},
	})
}
