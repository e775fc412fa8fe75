package healthroute

import (
	"net/url"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/operator"
)

// webhookConfig is the `webhook URL { secret_file FILE }` property: where the
// block's status changes are sent, and the secret they are signed with.
type webhookConfig struct {
	URL    string
	Secret []byte
}

// parseWebhook reads `webhook URL { secret_file FILE }`; the secret is required
// and as long as an api token must be.
func parseWebhook(c *caddy.Controller, args []string) (*webhookConfig, error) {
	if len(args) != 1 {
		return nil, c.ArgErr()
	}
	u, err := url.Parse(args[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, c.Errf("webhook: invalid URL '%s', expected http:// or https:// with a host", args[0])
	}
	w := &webhookConfig{URL: args[0]}
	opts := seen{}
	err = block(c, func(key string, v []string) error {
		switch key {
		case "secret_file":
			if err := opts.once(c, "webhook: ", key); err != nil {
				return err
			}
			f, err := oneArg(c, v)
			if err != nil {
				return err
			}
			path := rootPath(c, f)
			secret, err := operator.ReadToken(path)
			if err != nil {
				return c.Errf("webhook: secret_file: %v", err)
			}
			if n := len(secret); n < operator.MinTokenLen {
				return c.Errf("webhook: secret_file: %s holds a secret of %d characters, expected at least %d (openssl rand -base64 32 prints one)", path, n, operator.MinTokenLen)
			}
			w.Secret = []byte(secret)
		default:
			return c.Errf("webhook: unknown property '%s'", key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if w.Secret == nil {
		return nil, c.Errf("webhook %s: secret_file is required: events are signed with it", args[0])
	}
	return w, nil
}
