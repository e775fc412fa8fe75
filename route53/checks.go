package route53

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
)

// use marks health check id, and its children, to be written.
func (c *converter) use(id string) {
	if c.used[id] {
		return
	}
	c.used[id] = true
	if hc, ok := c.checks[id]; ok {
		for _, k := range hc.HealthCheckConfig.ChildHealthChecks {
			c.use(k)
		}
	}
}

// writeChecks writes the used health checks in input order.
func (c *converter) writeChecks(b *strings.Builder) error {
	unused := 0
	for i := range c.in.HealthChecks {
		hc := &c.in.HealthChecks[i]
		if !c.used[hc.Id] {
			unused++
			continue
		}
		if err := c.writeCheck(b, hc); err != nil {
			return fmt.Errorf("health check %s: %w", hc.Id, err)
		}
	}
	for id := range c.used {
		if _, ok := c.checks[id]; !ok {
			return fmt.Errorf("health check %s: a child of a calculated health check, not among the health checks read", id)
		}
	}
	switch {
	case unused == 1:
		c.warnf("left out 1 health check that no record set of %s uses", c.zone)
	case unused > 1:
		c.warnf("left out %d health checks that no record set of %s uses", unused, c.zone)
	}
	return nil
}

// Route 53's defaults, which healthroute shares.
const (
	defaultInterval = 30
	defaultFailures = 3
)

func (c *converter) writeCheck(b *strings.Builder, hc *HealthCheck) error {
	cfg := &hc.HealthCheckConfig
	if t, err := token(hc.Id); err != nil || t != hc.Id {
		return fmt.Errorf("Id: not usable as a check name (a blank, quote, '#' or brace)")
	}
	var opts []string
	var head string
	switch cfg.Type {
	case "HTTP", "HTTPS", "HTTP_STR_MATCH", "HTTPS_STR_MATCH":
		scheme := "http"
		if strings.HasPrefix(cfg.Type, "HTTPS") {
			scheme = "https"
		}
		host, err := checkHost(cfg)
		if err != nil {
			return err
		}
		if cfg.Port != nil {
			if *cfg.Port < 1 || *cfg.Port > 65535 {
				return fmt.Errorf("Port %d, expected 1 to 65535", *cfg.Port)
			}
			if def := map[string]int64{"http": 80, "https": 443}[scheme]; *cfg.Port != def {
				host = net.JoinHostPort(strings.Trim(host, "[]"), strconv.FormatInt(*cfg.Port, 10))
			}
		}
		path := cfg.ResourcePath
		if path == "" {
			path = "/"
		} else if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err := token(scheme + "://" + host + path)
		if err != nil {
			return fmt.Errorf("ResourcePath: %v", err)
		}
		head = "http " + u
		if scheme == "https" {
			head = "https " + u
		}
		if cfg.IPAddress != "" && cfg.FullyQualifiedDomainName != "" {
			opts = append(opts, "host "+strings.ToLower(strings.TrimSuffix(cfg.FullyQualifiedDomainName, ".")))
		}
		if strings.HasSuffix(cfg.Type, "_STR_MATCH") {
			if cfg.SearchString == "" {
				return fmt.Errorf("%s without a SearchString", cfg.Type)
			}
			s, err := token(cfg.SearchString)
			if err != nil {
				return fmt.Errorf("SearchString: %v", err)
			}
			opts = append(opts, "match "+s)
		}
		if scheme == "https" && cfg.EnableSNI != nil && !*cfg.EnableSNI && cfg.FullyQualifiedDomainName != "" {
			c.warnf("health check %s: EnableSNI is false, but healthroute sends %s as the TLS server name", hc.Id, strings.TrimSuffix(cfg.FullyQualifiedDomainName, "."))
		}
	case "TCP":
		host, err := checkHost(cfg)
		if err != nil {
			return err
		}
		if cfg.Port == nil || *cfg.Port < 1 || *cfg.Port > 65535 {
			return fmt.Errorf("TCP needs a Port from 1 to 65535")
		}
		head = "tcp " + net.JoinHostPort(strings.Trim(host, "[]"), strconv.FormatInt(*cfg.Port, 10))
	case "CALCULATED":
		if len(cfg.ChildHealthChecks) == 0 {
			return fmt.Errorf("CALCULATED without ChildHealthChecks")
		}
		for _, k := range cfg.ChildHealthChecks {
			if _, ok := c.checks[k]; !ok {
				return fmt.Errorf("child health check %s is not among the health checks read", k)
			}
		}
		head = "calculated " + strings.Join(cfg.ChildHealthChecks, " ")
		if t := cfg.HealthThreshold; t != nil && *t != int64(len(cfg.ChildHealthChecks)) {
			if *t < 0 || *t > 256 {
				return fmt.Errorf("HealthThreshold %d, expected 0 to 256", *t)
			}
			opts = append(opts, "threshold "+strconv.FormatInt(*t, 10))
		}
	case "RECOVERY_CONTROL":
		// A routing control is an operator's switch: it becomes a control check, held
		// in the replicated control state and set through the HTTP API.
		fmt.Fprintf(b, "# RECOVERY_CONTROL %s: a routing control; set it with POST /v1/controls/%s\n", commentSafe(cfg.RoutingControlArn), hc.Id)
		if cfg.Inverted {
			fmt.Fprintf(b, "check %s control {\n    invert\n}\n", hc.Id)
		} else {
			fmt.Fprintf(b, "check %s control\n", hc.Id)
		}
		return nil
	case "CLOUDWATCH_METRIC":
		what := "CloudWatch alarm"
		if a := cfg.AlarmIdentifier; a != nil {
			what += " " + a.Name + " in " + a.Region
		}
		what = commentSafe(what)
		if c.noDataUnhealthy(hc) {
			c.warnf("health check %s: a %s (%s) cannot be observed from here; imported as a disabled, inverted check, always unhealthy (its InsufficientDataHealthStatus): set its status with POST /v1/checks/%s/override", hc.Id, cfg.Type, what, hc.Id)
			fmt.Fprintf(b, "# %s %s: no data here, Unhealthy; set its status through the HTTP API\n", cfg.Type, what)
			fmt.Fprintf(b, "check %s tcp 127.0.0.1:1 {\n    disabled\n    invert\n}\n", hc.Id)
			return nil
		}
		c.warnf("health check %s: a %s (%s) cannot be observed from here; imported as a disabled check, always healthy: set its status with POST /v1/checks/%s/override", hc.Id, cfg.Type, what, hc.Id)
		fmt.Fprintf(b, "# %s %s: disabled; set its status through the HTTP API\n", cfg.Type, what)
		fmt.Fprintf(b, "check %s tcp 127.0.0.1:1 {\n    disabled\n}\n", hc.Id)
		return nil
	default:
		return fmt.Errorf("Type %q: %w", cfg.Type, ErrUnsupported)
	}
	if cfg.Type != "CALCULATED" {
		if v := cfg.RequestInterval; v != nil && *v != defaultInterval {
			if *v != 10 {
				return fmt.Errorf("RequestInterval %d, expected 10 or 30", *v)
			}
			opts = append(opts, "interval 10s")
		}
		if v := cfg.FailureThreshold; v != nil && *v != defaultFailures {
			if *v < 1 || *v > 10 {
				return fmt.Errorf("FailureThreshold %d, expected 1 to 10", *v)
			}
			opts = append(opts, "failure_threshold "+strconv.FormatInt(*v, 10))
		}
	}
	opts = append(opts, c.checkFields(hc)...)
	if cfg.Inverted {
		opts = append(opts, "invert")
	}
	if cfg.Disabled {
		opts = append(opts, "disabled")
	}
	fmt.Fprintf(b, "check %s %s", hc.Id, head)
	if len(opts) == 0 {
		b.WriteString("\n")
		return nil
	}
	b.WriteString(" {\n")
	for _, o := range opts {
		b.WriteString("    " + o + "\n")
	}
	b.WriteString("}\n")
	return nil
}

// commentSafe makes s fit on a comment line.
func commentSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// checkHost returns the host a check probes: its IPAddress (bracketed when IPv6),
// else its FullyQualifiedDomainName.
func checkHost(cfg *HealthCheckConfig) (string, error) {
	if cfg.IPAddress != "" {
		ip, err := netip.ParseAddr(cfg.IPAddress)
		if err != nil || ip.Zone() != "" {
			return "", fmt.Errorf("IPAddress %q, expected an IPv4 or IPv6 address", cfg.IPAddress)
		}
		if ip.Is6() {
			return "[" + ip.String() + "]", nil
		}
		return ip.String(), nil
	}
	if cfg.FullyQualifiedDomainName == "" {
		return "", fmt.Errorf("%s needs an IPAddress or a FullyQualifiedDomainName", cfg.Type)
	}
	n := strings.ToLower(strings.TrimSuffix(cfg.FullyQualifiedDomainName, "."))
	if _, err := token(n); err != nil || strings.ContainsAny(n, " \t\"#{}/") {
		return "", fmt.Errorf("FullyQualifiedDomainName %q, expected a host name", cfg.FullyQualifiedDomainName)
	}
	return n, nil
}
