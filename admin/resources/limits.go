package resources

import (
	"net/netip"
	"strings"
)

// RateLimit is a `rate_limit` block. Zero means unlimited for that field.
type RateLimit struct {
	RPS, RPM, RPH, RPD int64
	TPM, TPD           int64
	Concurrency        int64
}

// IsZero reports whether no limit is set.
func (r RateLimit) IsZero() bool { return r == RateLimit{} }

// decodeRateLimit reads a rate_limit-shaped block. fields limits which
// subfields are accepted (mcp_rate_limits take no token limits).
func decodeRateLimit(o *obj, tokens bool) *RateLimit {
	rl := &RateLimit{}
	read := func(name string, dst *int64) {
		if v, ok := o.intMin(name, 1); ok {
			*dst = v
		}
	}
	read("rps", &rl.RPS)
	read("rpm", &rl.RPM)
	read("rph", &rl.RPH)
	read("rpd", &rl.RPD)
	if tokens {
		read("tpm", &rl.TPM)
		read("tpd", &rl.TPD)
	}
	read("concurrency", &rl.Concurrency)
	o.finish()
	return rl
}

// decodeCIDRs reads an allow list in CIDR notation.
func decodeCIDRs(o *obj, name string) []netip.Prefix {
	list, ok := o.strList(name)
	if !ok {
		return nil
	}
	out := make([]netip.Prefix, 0, len(list))
	for i, s := range list {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			o.d.errAt(o.e, indexPath(o.fieldPath(name), i), "must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32")
			continue
		}
		out = append(out, p.Masked())
	}
	return out
}

// checkGlob validates a name glob with at most one '*'.
func checkGlob(o *obj, name string, i int, g string) bool {
	if strings.Count(g, "*") > 1 {
		o.d.errAt(o.e, indexPath(o.fieldPath(name), i), "a glob may hold a single '*'")
		return false
	}
	if g == "" {
		o.d.errAt(o.e, indexPath(o.fieldPath(name), i), "must not be empty")
		return false
	}
	return true
}

// GlobMatch reports whether name matches glob g (at most one '*').
func GlobMatch(g, name string) bool {
	i := strings.IndexByte(g, '*')
	if i < 0 {
		return g == name
	}
	prefix, suffix := g[:i], g[i+1:]
	return len(name) >= len(prefix)+len(suffix) && strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix)
}
