package healthroute

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/watch"
)

// block parses the optional "{ ... }" after a line's arguments, calling each with
// every line's first token and the rest of that line. It is the one way blocks are
// read, at every level: the caller reads its own line's arguments first (RemainingArgs
// stops in front of '{'), so the only token left on the line is '{'. A block may sit on
// one line, `{ token_file FILE }`: its '}' then arrives as the line's last argument,
// or, after a nested one-line block, as the next token on the line.
func block(c *caddy.Controller, each func(key string, args []string) error) error {
	if !c.NextArg() {
		return nil
	}
	for c.Next() {
		if c.Val() == "}" {
			return nil
		}
		key := c.Val()
		args, closed := closing(c.RemainingArgs())
		if err := each(key, args); err != nil {
			return err
		}
		if closed {
			return nil
		}
		if c.NextArg() { // each left a token on its line: '{' it did not read, or our '}'
			if c.Val() == "}" {
				return nil
			}
			return c.Errf("%s: unexpected '%s', expected the end of the line (%s takes no block)", key, c.Val(), key)
		}
	}
	return c.EOFErr()
}

// closing strips a block's closing '}' from the end of a line's arguments.
func closing(args []string) ([]string, bool) {
	if n := len(args); n > 0 && args[n-1] == "}" {
		return args[:n-1], true
	}
	return args, false
}

// oneArg returns an option's single argument.
func oneArg(c *caddy.Controller, args []string) (string, error) {
	if len(args) != 1 {
		return "", c.ArgErr()
	}
	return args[0], nil
}

// seen remembers the line of each single-valued option of one block, so a second
// one is refused rather than silently winning.
type seen map[string]int

// once records key, or refuses it when the block gave it already; prefix names the
// block in the error ("check web: ").
func (s seen) once(c *caddy.Controller, prefix, key string) error {
	if line, dup := s[key]; dup {
		return c.Errf("%s%s is given twice (first at line %d), expected it once", prefix, key, line)
	}
	s[key] = c.Line()
	return nil
}

// rootPath resolves a file named in the Corefile: a relative path is relative to the
// server's root directory (the root plugin), as CoreDNS's file plugin reads it.
func rootPath(c *caddy.Controller, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dnsserver.GetConfig(c).Root, path)
}

// normalizeName checks that n is a domain name and returns it lower-cased and fully
// qualified. A leading "*." label (a wildcard owner) is allowed when wild is set.
func normalizeName(n string, wild bool) (string, bool) {
	if _, ok := dns.IsDomainName(n); !ok || n == "" {
		return "", false
	}
	n = plugin.Name(n).Normalize()
	if i := strings.IndexByte(n, '*'); i >= 0 && (!wild || i != 0 || !strings.HasPrefix(n, "*.") || strings.Count(n, "*") > 1) {
		return "", false
	}
	return n, true
}

// limitHint adds to a file's size-limit error how to raise the limit.
func limitHint(err error) error {
	if watch.IsTooLarge(err) {
		return fmt.Errorf("%w (max_file_size raises the limit)", err)
	}
	return err
}

// intArg returns an option's single argument as a number from lo to hi; any other
// value is refused as "PREFIX: invalid value 'V', expected WANT".
func intArg(c *caddy.Controller, args []string, lo, hi int, prefix, want string) (int, error) {
	v, err := oneArg(c, args)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, c.Errf("%s: invalid value '%s', expected %s", prefix, v, want)
	}
	return n, nil
}

// durationArg returns an option's single argument as a duration from lo to hi; any
// other value is refused as "PREFIX: invalid duration 'V', expected WANT".
func durationArg(c *caddy.Controller, args []string, lo, hi time.Duration, prefix, want string) (time.Duration, error) {
	v, err := oneArg(c, args)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		return 0, c.Errf("%s: invalid duration '%s', expected %s", prefix, v, want)
	}
	return d, nil
}

// enumArg returns the value that values maps an option's single argument to; a word
// not in it is refused as "PREFIX: invalid value 'V', expected WANT".
func enumArg[T any](c *caddy.Controller, args []string, values map[string]T, prefix, want string) (T, error) {
	var zero T
	v, err := oneArg(c, args)
	if err != nil {
		return zero, err
	}
	t, ok := values[v]
	if !ok {
		return zero, c.Errf("%s: invalid value '%s', expected %s", prefix, v, want)
	}
	return t, nil
}
