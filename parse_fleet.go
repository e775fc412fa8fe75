package healthroute

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/health/fleet"
	"github.com/healthroute/healthroute/internal/watch"
)

// parseFleet reads `fleet { bind; advertise; join; name; key_file; quorum; insecure;
// profile; heartbeat; suspicion; max_connections; region; role }` into cfg.Fleet. It reads and checks the
// key file and starts nothing.
func parseFleet(c *caddy.Controller, cfg *blockConfig) error {
	if cfg.Fleet != nil {
		return c.Errf("fleet is defined twice")
	}
	if len(c.RemainingArgs()) != 0 {
		return c.ArgErr()
	}
	here := pos{c.File(), c.Line()}
	fc := &fleet.Config{Bind: netip.AddrPortFrom(netip.IPv4Unspecified(), fleet.DefaultPort), Quorum: fleet.DefaultQuorum}
	keyFile := ""
	seen := map[string]bool{}
	var suspicionAt pos
	err := block(c, func(key string, a []string) error {
		if key != "join" && seen[key] {
			return c.Errf("fleet: %s: given twice", key)
		}
		seen[key] = true
		duration := func(lo, hi time.Duration) (time.Duration, error) {
			return durationArg(c, a, lo, hi, "fleet: "+key, fmt.Sprintf("%s to %s", lo, hi))
		}
		switch key {
		case "bind":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			ap, err := netip.ParseAddrPort(v)
			if err != nil || ap.Port() == 0 {
				return c.Errf("fleet: bind: invalid value '%s', expected ADDRESS:PORT", v)
			}
			fc.Bind = ap
		case "advertise":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			ap, err := netip.ParseAddrPort(v)
			switch {
			case err != nil || ap.Port() == 0:
				return c.Errf("fleet: advertise: invalid value '%s', expected ADDRESS:PORT, the IP address and port the other members reach this one at", v)
			case ap.Addr().IsUnspecified() || ap.Addr().IsMulticast():
				return c.Errf("fleet: advertise: invalid value '%s', expected the address of this member as the others reach it, not %s", v, ap.Addr())
			case ap.Addr().Zone() != "":
				return c.Errf("fleet: advertise: invalid value '%s', expected an address without a zone (%%%s)", v, ap.Addr().Zone())
			}
			fc.Advertise = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		case "join":
			if len(a) == 0 {
				return c.ArgErr()
			}
			for _, v := range a {
				ap, err := netip.ParseAddrPort(v)
				if err != nil || ap.Port() == 0 {
					return c.Errf("fleet: join: invalid value '%s', expected ADDRESS:PORT", v)
				}
				fc.Join = append(fc.Join, ap)
			}
		case "name":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			if len(v) > 255 {
				return c.Errf("fleet: name: invalid value '%s', expected at most 255 bytes", v)
			}
			fc.Name = v
		case "key_file":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			v = rootPath(c, v)
			b, err := readSmallFile(v, maxKeyFile)
			if err != nil {
				return c.Errf("fleet: key_file: cannot read '%s': %v", v, err)
			}
			k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
			if n := len(k); err != nil || n != 16 && n != 24 && n != 32 {
				return c.Errf("fleet: key_file: invalid key in '%s', expected base64 of 16, 24 or 32 bytes (openssl rand -base64 32)", v)
			}
			fc.Key, keyFile = k, v
		case "quorum":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(strings.TrimSuffix(v, "%"))
			if err != nil || !strings.HasSuffix(v, "%") || n < 0 || n > 99 {
				return c.Errf("fleet: quorum: invalid value '%s', expected a percentage from 0%% to 99%%", v)
			}
			fc.Quorum = n
		case "insecure":
			if len(a) != 0 {
				return c.ArgErr()
			}
			fc.Insecure = true
		case "profile":
			p, err := enumArg(c, a, map[string]fleet.Profile{"wan": fleet.WAN, "lan": fleet.LAN}, "fleet: profile", "lan or wan")
			if err != nil {
				return err
			}
			fc.Profile = p
		case "heartbeat":
			d, err := duration(100*time.Millisecond, 10*time.Second)
			if err != nil {
				return err
			}
			fc.Beat = d
		case "suspicion":
			d, err := duration(300*time.Millisecond, 10*time.Minute)
			if err != nil {
				return err
			}
			fc.Suspicion, suspicionAt = d, pos{c.File(), c.Line()}
		case "region":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			if !isRegionName(v) {
				return c.Errf("fleet: region: invalid value '%s', expected a name of lower-case letters, digits and dashes such as us-east-1", v)
			}
			fc.Region = v
		case "role":
			r, err := parseRole(c, a)
			if err != nil {
				return err
			}
			fc.Role = r
		case "max_connections":
			if len(a) < 1 || len(a) > 2 {
				return c.ArgErr()
			}
			var n [2]int
			for i, v := range a {
				k, err := strconv.Atoi(v)
				if err != nil || k < 1 || k > 4096 {
					return c.Errf("fleet: max_connections: invalid value '%s', expected a number from 1 to 4096", v)
				}
				n[i] = k
			}
			if n[1] > n[0] {
				return c.Errf("fleet: max_connections: %d per address is more than %d in all", n[1], n[0])
			}
			fc.Limits.Streams, fc.Limits.StreamsPerPeer = n[0], n[1]
		default:
			return c.Errf("fleet: unknown property '%s'", key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	beat := cmp.Or(fc.Beat, fleet.DefaultBeat)
	switch {
	case fc.Suspicion != 0 && fc.Suspicion < 3*beat:
		return suspicionAt.errorf("fleet: suspicion: %s is less than 3 heartbeats (%s)", fc.Suspicion, 3*beat)
	case keyFile == "" && !fc.Insecure:
		return here.errorf("fleet: key_file: missing, expected a key file, or insecure to gossip in the clear")
	case keyFile != "" && fc.Insecure:
		return here.errorf("fleet: insecure: conflicts with key_file '%s'", keyFile)
	}
	if fc.Name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return here.errorf("fleet: name: missing, and the host name is unknown (%v)", err)
		}
		fc.Name = h
	}
	cfg.Fleet = fc
	return nil
}

// parseRole reads `role answer|probe|both`: what this member does. Answering only
// and probing only exclude each other: a member that does neither is no member.
func parseRole(c *caddy.Controller, a []string) (fleet.Role, error) {
	if len(a) == 0 {
		return 0, c.ArgErr()
	}
	if len(a) > 1 {
		if slices.Contains(a, "answer") && slices.Contains(a, "probe") {
			return 0, c.Errf("fleet: role: %s conflict: answer means it never probes, probe that it only probes; leave role out (or write both) for a member that answers and probes", strings.Join(a, " and "))
		}
		return 0, c.Errf("fleet: role: %d values '%s', expected one of answer, probe or both", len(a), strings.Join(a, " "))
	}
	switch a[0] {
	case "both":
		return fleet.RoleBoth, nil
	case "answer":
		return fleet.RoleAnswer, nil
	case "probe":
		return fleet.RoleProbe, nil
	}
	return 0, c.Errf("fleet: role: invalid value '%s', expected answer (answers from the others' reports, never probes), probe or both", a[0])
}

// placementWarnings returns, at their Corefile lines, the checks whose checkers or
// regions have no effect: without a fleet block this instance probes every check
// itself, and a member of role answer probes none.
func placementWarnings(cfg *blockConfig) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cfg.Checks)) {
		s := cfg.Checks[name]
		if s.Checkers == 0 && len(s.Regions) == 0 || !s.Probed() {
			continue
		}
		if cfg.Fleet == nil {
			out = append(out, fmt.Sprintf("%s: check %s: checkers and regions place a check's probes on fleet members: without a fleet block, this instance probes it itself", s.Origin, name))
		}
	}
	if cfg.Fleet != nil && cfg.Fleet.Role == fleet.RoleAnswer && len(cfg.Fleet.Join) == 0 {
		out = append(out, fmt.Sprintf("fleet %s: role answer without join: this member probes nothing and has no member to answer from", cfg.Fleet.Name))
	}
	return out
}

// maxKeyFile bounds what key_file reads: a key is a line of base64, not a file's worth.
const maxKeyFile = 4 << 10

// readSmallFile reads the file at path, refusing one over limit bytes unread past it.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := watch.Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
