// Package tlsmap serves the admin API's SSL objects on the data plane's
// TLS listener: the enabled server certificates of a snapshot indexed by
// SNI (exact names, and "*." wildcards matching any name under their
// suffix, the longest suffix first), one tls.Config per certificate so its
// ssl_protocols apply, chosen during the handshake. Store follows the
// snapshot holder: the first handshake after a new snapshot rebuilds the
// map and swaps it atomically, so a certificate written through the admin
// API is served without a restart.
package tlsmap

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	admingw "gw/admin/gateway"
)

// MaxSNI is the longest name looked up (a DNS name is at most 253 bytes).
const MaxSNI = 253

// Map is an immutable SNI index.
type Map struct {
	exact map[string]*tls.Config
	wild  map[string]*tls.Config // by suffix with its dot: ".example.com"
}

// Pattern splits an SNI pattern into its lookup key and whether it is a
// wildcard: "*.Example.com" is (".example.com", true), "a.b" is ("a.b",
// false). It reports false for a pattern that cannot match a name (empty,
// a "*" anywhere but a leading "*." label, longer than MaxSNI, or not
// ASCII: a TLS server name is an ASCII host name (RFC 6066; IDNs travel as
// punycode A-labels), and lookups fold ASCII case only).
func Pattern(p string) (key string, wildcard, ok bool) {
	for i := 0; i < len(p); i++ {
		if p[i] >= 0x80 {
			return "", false, false
		}
	}
	p = strings.ToLower(strings.TrimSuffix(p, "."))
	if strings.HasPrefix(p, "*.") {
		key, wildcard = p[1:], true
		if len(key) < 2 {
			return "", false, false
		}
	} else {
		key = p
	}
	if key == "" || len(key) > MaxSNI || strings.ContainsAny(key, "* \t") {
		return "", false, false
	}
	return key, wildcard, true
}

// Build indexes snap's enabled server certificates; prev (may be nil) is
// the map being replaced, whose configs are reused for unchanged
// certificates. It returns the reasons certificates were left out.
func Build(snap *admingw.Snapshot, reuse map[*admingw.Cert]*tls.Config) (*Map, map[*admingw.Cert]*tls.Config, []string) {
	m := &Map{exact: map[string]*tls.Config{}, wild: map[string]*tls.Config{}}
	cfgs := make(map[*admingw.Cert]*tls.Config, len(snap.SSLs))
	var skipped []string
	// Sorted so that two certificates claiming one SNI resolve the same
	// way in every process: the first ID in byte order wins.
	ids := make([]string, 0, len(snap.SSLs))
	for id := range snap.SSLs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := snap.SSLs[id]
		if !c.Enabled || c.Type != "server" {
			continue
		}
		if len(c.Certificates) == 0 {
			skipped = append(skipped, "ssl "+id+": its certificate is a secret reference, which the data plane does not resolve yet")
			continue
		}
		cfg := reuse[c]
		if cfg == nil {
			var err error
			if cfg, err = configFor(c); err != nil {
				skipped = append(skipped, "ssl "+id+": "+err.Error())
				continue
			}
		}
		cfgs[c] = cfg
		for _, sni := range c.SNIs {
			key, wild, ok := Pattern(sni)
			if !ok {
				skipped = append(skipped, "ssl "+id+": sni "+sni+" cannot match a name")
				continue
			}
			idx := m.exact
			if wild {
				idx = m.wild
			}
			if idx[key] == nil {
				idx[key] = cfg
			}
		}
	}
	return m, cfgs, skipped
}

var protocols = map[string]uint16{"TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

// configFor is the handshake configuration of one certificate. Go takes a
// version range, so ssl_protocols serves from its lowest to its highest
// listed version ("TLSv1.1","TLSv1.3" also allows 1.2); unset is APISIX's
// default, TLSv1.2 and TLSv1.3.
func configFor(c *admingw.Cert) (*tls.Config, error) {
	cfg := &tls.Config{
		Certificates: c.Certificates,
		MinVersion:   tls.VersionTLS12,
		MaxVersion:   tls.VersionTLS13,
		// The data plane speaks HTTP/1.1 (fasthttp).
		NextProtos: []string{"http/1.1"},
	}
	if len(c.Protocols) > 0 {
		cfg.MinVersion, cfg.MaxVersion = 0, 0
		for _, p := range c.Protocols {
			v, ok := protocols[p]
			if !ok {
				return nil, errors.New("ssl_protocols: unknown protocol " + p)
			}
			if cfg.MinVersion == 0 || v < cfg.MinVersion {
				cfg.MinVersion = v
			}
			if v > cfg.MaxVersion {
				cfg.MaxVersion = v
			}
		}
	}
	return cfg, nil
}

// Lookup returns the configuration for a client's SNI: an exact match,
// else the longest matching wildcard suffix, else nil. It does not
// allocate.
func (m *Map) Lookup(sni string) *tls.Config {
	if len(sni) == 0 || len(sni) > MaxSNI {
		return nil
	}
	var buf [MaxSNI]byte
	b := buf[:len(sni)]
	for i := 0; i < len(sni); i++ {
		c := sni[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	if b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	if cfg := m.exact[string(b)]; cfg != nil {
		return cfg
	}
	for i := 1; i < len(b); i++ {
		if b[i] == '.' {
			if cfg := m.wild[string(b[i:])]; cfg != nil {
				return cfg
			}
		}
	}
	return nil
}

// Len is the number of SNI entries.
func (m *Map) Len() int { return len(m.exact) + len(m.wild) }

// ErrNoCertificate fails a handshake whose SNI has no certificate (or
// that sent none), as APISIX does without a fallback SNI.
var ErrNoCertificate = errors.New("no certificate for the requested server name")

// Store serves the current snapshot's map.
type Store struct {
	holder *admingw.Holder
	log    *slog.Logger
	mu     sync.Mutex
	cur    atomic.Pointer[built]
}

type built struct {
	snap *admingw.Snapshot
	m    *Map
	cfgs map[*admingw.Cert]*tls.Config
}

// NewStore returns a store following h.
func NewStore(h *admingw.Holder, log *slog.Logger) *Store { return &Store{holder: h, log: log} }

// Current returns the map of the holder's snapshot, building it first when
// the snapshot changed.
func (s *Store) Current() *Map {
	snap := s.holder.Load()
	b := s.cur.Load()
	if b != nil && b.snap == snap {
		return b.m
	}
	if snap == nil {
		return &Map{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b = s.cur.Load(); b != nil && b.snap == snap {
		return b.m
	}
	var reuse map[*admingw.Cert]*tls.Config
	if b != nil {
		reuse = b.cfgs
	}
	m, cfgs, skipped := Build(snap, reuse)
	for _, why := range skipped {
		s.log.Warn("ssl not served", "reason", why)
	}
	if b == nil || len(cfgs) != len(b.cfgs) || !sameCerts(cfgs, b.cfgs) {
		s.log.Info("gateway certificates loaded", "revision", snap.Rev, "certificates", len(cfgs), "snis", m.Len())
	}
	s.cur.Store(&built{snap: snap, m: m, cfgs: cfgs})
	return m
}

func sameCerts(a, b map[*admingw.Cert]*tls.Config) bool {
	for c := range a {
		if _, ok := b[c]; !ok {
			return false
		}
	}
	return true
}

// GetConfigForClient is the listener's tls.Config hook: the certificate
// (and protocol range) chosen by the client's SNI.
func (s *Store) GetConfigForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	if cfg := s.Current().Lookup(hello.ServerName); cfg != nil {
		return cfg, nil
	}
	return nil, ErrNoCertificate
}

// Config is the listener's base configuration.
func (s *Store) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: s.GetConfigForClient, NextProtos: []string{"http/1.1"}}
}

// NewTestMap returns a map with one entry (for tests and fuzzing outside
// the package).
func NewTestMap(key string, wildcard bool) *Map {
	m := &Map{exact: map[string]*tls.Config{}, wild: map[string]*tls.Config{}}
	if wildcard {
		m.wild[key] = &tls.Config{}
	} else {
		m.exact[key] = &tls.Config{}
	}
	return m
}
