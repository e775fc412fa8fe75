package healthroute

import (
	"net"

	"github.com/coredns/caddy"
	"github.com/healthroute/healthroute/operator"
)

// parseAPI reads `api ADDRESS [{ token_file FILE }]`.
func parseAPI(c *caddy.Controller, args []string) (*apiConfig, error) {
	if len(args) != 1 {
		return nil, c.ArgErr()
	}
	if _, port, err := net.SplitHostPort(args[0]); err != nil || !validPort(port) {
		return nil, c.Errf("api: invalid address '%s', expected HOST:PORT (port 1-65535) such as 127.0.0.1:8053", args[0])
	}
	a := &apiConfig{Addr: args[0], at: pos{c.File(), c.Line()}}
	opts := seen{}
	err := block(c, func(key string, v []string) error {
		switch key {
		case "token_file":
			if err := opts.once(c, "api: ", key); err != nil {
				return err
			}
			f, err := oneArg(c, v)
			if err != nil {
				return err
			}
			path := rootPath(c, f)
			toks, err := operator.ReadTokens(path)
			if err != nil {
				return c.Errf("api: token_file: %v", err)
			}
			if len(toks) == 0 {
				return c.Errf("api: token_file: %s holds a token of 0 characters, expected at least %d (TOKEN or NAME TOKEN lines; openssl rand -base64 32 prints a token)", path, operator.MinTokenLen)
			}
			names := map[string]bool{}
			for _, t := range toks {
				if n := len(t.Value); n < operator.MinTokenLen {
					return c.Errf("api: token_file: %s holds a token of %d characters, expected at least %d (openssl rand -base64 32 prints one)", path, n, operator.MinTokenLen)
				}
				if names[t.Name] {
					return c.Errf("api: token_file: %s names two tokens %s, expected each name once", path, t.Name)
				}
				names[t.Name] = true
			}
			a.TokenFile = path
		case "history_dir":
			dir, err := parseHistoryDir(c, opts, v)
			if err != nil {
				return err
			}
			a.HistoryDir = dir
		default:
			return c.Errf("api: unknown property '%s'", key)
		}
		return nil
	})
	return a, err
}

// parseHistoryDir reads `history_dir DIR` of an api block: an existing directory
// this process can write to.
func parseHistoryDir(c *caddy.Controller, opts seen, args []string) (string, error) {
	return parseWritableDir(c, opts, "api: ", "history_dir", args)
}

// parseWritableDir reads a property whose one argument is an existing directory
// this process can write to (relative to the server's root), once per block.
func parseWritableDir(c *caddy.Controller, opts seen, prefix, key string, args []string) (string, error) {
	if err := opts.once(c, prefix, key); err != nil {
		return "", err
	}
	v, err := oneArg(c, args)
	if err != nil {
		return "", err
	}
	dir := rootPath(c, v)
	if err := writableDir(dir); err != nil {
		return "", c.Errf("%s%s: %s is not a directory this process can write to: %v", prefix, key, dir, err)
	}
	return dir, nil
}
