package route53

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/miekg/dns"
)

// fieldCount is the number of presentation fields of one value of each type a
// member target can hold; 0 for TXT and SPF, whose values are one token each.
var fieldCount = map[string]int{
	"A": 1, "AAAA": 1, "CNAME": 1, "NS": 1, "PTR": 1,
	"MX": 2, "CAA": 3, "SRV": 4, "DS": 4, "NAPTR": 6,
	"TXT": 0, "SPF": 0,
}

// keywords are the member options; a bare value token must not be one.
var keywords = map[string]bool{"check": true, "id": true, "evaluate_target_health": true, "ttl": true, "{": true, "}": true}

// value checks one Route 53 value of type typ and returns it as member-target
// tokens (see the package documentation).
func value(typ, v string) (string, error) {
	if typ == "A" || typ == "AAAA" { // the common case, without the zone parser
		ip, err := netip.ParseAddr(strings.TrimSpace(v))
		if err != nil || ip.Zone() != "" || (typ == "A") != ip.Is4() {
			return "", fmt.Errorf("invalid %s value %q", typ, v)
		}
		return ip.String(), nil
	}
	rr, err := dns.NewRR(". 0 IN " + typ + " " + v)
	if err != nil || rr == nil {
		if err == nil {
			err = errors.New("empty")
		}
		return "", fmt.Errorf("invalid %s value %q: %v", typ, v, err)
	}
	hdr := rr.Header().String()
	rdata := strings.TrimPrefix(rr.String(), hdr)
	switch r := rr.(type) {
	case *dns.CNAME:
		return strings.ToLower(r.Target), nil
	case *dns.TXT:
		return txtToken(r.Txt, rdata), nil
	case *dns.SPF:
		return txtToken(r.Txt, rdata), nil
	}
	fields := splitFields(rdata)
	if n := fieldCount[typ]; len(fields) != n {
		return "", fmt.Errorf("invalid %s value %q: %d fields, expected %d", typ, v, len(fields), n)
	}
	for i, f := range fields {
		if strings.HasPrefix(f, `"`) {
			fields[i] = `"` + noEscapedQuote(f[1:len(f)-1]) + `"`
		} else if t, err := token(f); err != nil {
			return "", fmt.Errorf("invalid %s value %q: %v", typ, v, err)
		} else {
			fields[i] = t
		}
	}
	return strings.Join(fields, " "), nil
}

// txtToken writes a TXT or SPF value: the short form (one character-string's
// content, quoted) when that string is safe as a bare token, else the whole rdata as
// one quoted token.
func txtToken(strs []string, rdata string) string {
	if len(strs) == 1 {
		f := splitFields(rdata)
		if len(f) == 1 && len(f[0]) > 2 {
			content := f[0][1 : len(f[0])-1]
			if !strings.ContainsAny(content, `\"`) && !keywords[content] {
				return `"` + content + `"`
			}
		}
	}
	return `"` + strings.ReplaceAll(noEscapedQuote(rdata), `"`, `\"`) + `"`
}

// noEscapedQuote rewrites each escaped quote (\") of presentation text as \034,
// which means the same and survives the Corefile lexer, whose only escape is \".
func noEscapedQuote(s string) string {
	if !strings.Contains(s, `\"`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if s[i+1] == '"' {
				b.WriteString(`\034`)
			} else {
				b.WriteString(s[i : i+2])
			}
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// splitFields splits presentation rdata at blanks outside quoted strings; a quoted
// string keeps its quotes.
func splitFields(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if s[i] == ' ' || s[i] == '\t' {
			i++
			continue
		}
		j, quoted := i, s[i] == '"'
		if quoted {
			j++
		}
		for j < len(s) {
			switch c := s[j]; {
			case c == '\\':
				j += 2
				continue
			case quoted && c == '"':
				j++
			case !quoted && (c == ' ' || c == '\t'):
			default:
				j++
				continue
			}
			break
		}
		j = min(j, len(s))
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// token writes s as one Corefile token: bare when it can be, else quoted. The
// Corefile lexer's only escape is \", so a backslash right before a quote cannot be
// written, and a lone brace reads as a brace however it is quoted.
func token(s string) (string, error) {
	if s == "{" || s == "}" || !utf8.ValidString(s) {
		return "", fmt.Errorf("%q cannot be written as a Corefile token", s)
	}
	if s != "" && !strings.ContainsAny(s, "\"#{}") && !strings.ContainsFunc(s, unicode.IsSpace) {
		return s, nil
	}
	if strings.Contains(s, `\"`) || strings.HasSuffix(s, `\`) {
		return "", fmt.Errorf("%q cannot be written in a Corefile (a backslash before a quote)", s)
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`, nil
}
