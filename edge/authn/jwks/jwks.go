// Package jwks keeps the signing keys of the JWKS OIDC providers: fetched
// from jwks_uri (or the jwks_uri of the issuer's discovery document), cached,
// refreshed in the background and on an unknown kid (rate-limited, so a flood
// of forged kids cannot hammer the identity provider). A failed refresh keeps
// the last good keys and is reported (metrics and /status/config).
//
// Key sets outlive snapshots: the Registry keys them by provider identity
// (name, issuer and key URL), so a reload that leaves a provider unchanged
// keeps its keys and its refresh loop.
package jwks

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/VictoriaMetrics/metrics"
)

// Source identifies one provider's key set.
type Source struct {
	Provider string // oidc_providers name
	Issuer   string
	// JWKSURI is the key endpoint; empty means Discovery is read for it.
	JWKSURI   string
	Discovery string
}

// Options tune fetching. Zero values take the defaults.
type Options struct {
	// RefreshInterval is how often a key set is refreshed in the background
	// (default 10 minutes).
	RefreshInterval time.Duration
	// MinMissInterval is the shortest time between two refreshes triggered by
	// an unknown kid or an empty set (default 10 s): at most one such fetch
	// per provider per interval, whatever the number of forged kids.
	MinMissInterval time.Duration
	// RetryMin is the first delay after a failed background refresh; it
	// doubles up to RefreshInterval (default 5 s).
	RetryMin time.Duration
	// FetchTimeout bounds one fetch (discovery and keys; default 10 s).
	FetchTimeout time.Duration
	// Client fetches; nil uses a client with FetchTimeout.
	Client *http.Client
}

const maxDocumentBytes = 1 << 20

// MinRSABits is the smallest RSA key accepted from a key set.
const MinRSABits = 2048

func (o Options) withDefaults() Options {
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 10 * time.Minute
	}
	if o.MinMissInterval <= 0 {
		o.MinMissInterval = 10 * time.Second
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 5 * time.Second
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = 10 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.FetchTimeout}
	}
	return o
}

// Key is one usable signing key of a set.
type Key struct {
	KID string
	// Alg is the JWK's alg; "" when the key does not restrict it.
	Alg    string
	Public crypto.PublicKey
}

// ErrUnavailable: the provider's keys have never been fetched successfully.
var ErrUnavailable = errors.New("jwks: signing keys unavailable")

// Registry holds the key sets of the process.
type Registry struct {
	opt  Options
	mu   sync.Mutex
	sets map[Source]*Set
}

// NewRegistry returns an empty registry.
func NewRegistry(opt Options) *Registry {
	return &Registry{opt: opt.withDefaults(), sets: map[Source]*Set{}}
}

// Options returns the registry's effective options.
func (r *Registry) Options() Options { return r.opt }

// Get returns the set of src, creating it when absent. A set starts fetching
// on its first Find, never earlier: a provider no token has named yet costs
// its identity provider nothing.
func (r *Registry) Get(src Source) *Set {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sets[src]
	if s == nil {
		s = newSet(src, r.opt)
		r.sets[src] = s
	}
	return s
}

// Sync makes the registry hold exactly the sets of srcs: absent ones are
// added (idle until their first token), others stopped and dropped. Called
// with every applied snapshot.
func (r *Registry) Sync(srcs []Source) {
	keep := make(map[Source]bool, len(srcs))
	for _, s := range srcs {
		keep[s] = true
	}
	r.mu.Lock()
	var stop []*Set
	for src, s := range r.sets {
		if !keep[src] {
			stop = append(stop, s)
			delete(r.sets, src)
		}
	}
	for _, src := range srcs {
		if r.sets[src] == nil {
			r.sets[src] = newSet(src, r.opt)
		}
	}
	r.mu.Unlock()
	for _, s := range stop {
		s.Close()
	}
}

// Close stops every set.
func (r *Registry) Close() { r.Sync(nil) }

// Status reports every set, by provider name.
func (r *Registry) Status() []Status {
	r.mu.Lock()
	out := make([]Status, 0, len(r.sets))
	for _, s := range r.sets {
		out = append(out, s.Status())
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	return out
}

// Key set states.
const (
	StateIdle        = "idle"        // no token has named this provider yet; nothing fetched
	StateOK          = "ok"          // the last refresh succeeded
	StateStale       = "stale"       // the last refresh failed; the last good keys still verify
	StateUnavailable = "unavailable" // no fetch has succeeded: tokens of this provider get 401
)

// Status is one set's state for /status/config.
type Status struct {
	Provider string `json:"provider"`
	// URL is jwks_uri, or the discovery URL, without user-info.
	URL           string     `json:"url"`
	State         string     `json:"state"`
	Keys          int        `json:"keys"`
	LastRefreshAt *time.Time `json:"last_refresh_at,omitempty"`
	LastSuccessAt *time.Time `json:"last_success_at,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
}

// Set is one provider's signing keys.
type Set struct {
	src Source
	opt Options

	keys atomic.Pointer[[]Key] // nil until the first successful fetch

	mu       sync.Mutex
	started  bool
	closed   bool
	stop     chan struct{}
	inflight chan struct{} // non-nil while a fetch runs; closed when it ends
	lastMiss time.Time
	jwksURI  string // discovered key endpoint (when Source.JWKSURI is empty)
	st       Status

	up       *metrics.Gauge
	nkeys    *metrics.Gauge
	okTotal  *metrics.Counter
	errTotal *metrics.Counter
	names    []string
}

func newSet(src Source, opt Options) *Set {
	s := &Set{src: src, opt: opt, stop: make(chan struct{})}
	u := src.JWKSURI
	if u == "" {
		u = src.Discovery
	}
	s.st = Status{Provider: src.Provider, URL: redactURL(u), State: StateIdle}
	p := `{provider="` + escapeLabel(src.Provider) + `"`
	s.names = []string{`gw_jwks_up` + p + `}`, `gw_jwks_keys` + p + `}`,
		`gw_jwks_refresh_total` + p + `,result="ok"}`, `gw_jwks_refresh_total` + p + `,result="error"}`}
	s.up = metrics.GetOrCreateGauge(s.names[0], nil)
	s.nkeys = metrics.GetOrCreateGauge(s.names[1], nil)
	s.okTotal = metrics.GetOrCreateCounter(s.names[2])
	s.errTotal = metrics.GetOrCreateCounter(s.names[3])
	return s
}

// Close stops the background refresh and drops the set's metrics.
func (s *Set) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	for _, n := range s.names {
		metrics.UnregisterMetric(n)
	}
}

// Status reports the set's state.
func (s *Set) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Find returns the keys that may have signed a token with kid ("" when the
// token names none: every key). On the first call it starts the background
// refresh and waits for the first fetch; an unknown kid, or a set that has
// no keys yet, triggers a refresh at most once per MinMissInterval (callers
// wait for a fetch already under way instead). The wait is bounded by ctx.
// ErrUnavailable when no fetch has ever succeeded.
func (s *Set) Find(ctx context.Context, kid string) ([]Key, error) {
	s.start()
	if ks := s.keys.Load(); ks != nil {
		if out := match(*ks, kid); len(out) > 0 {
			return out, nil
		}
	}
	if !s.missRefresh(ctx) {
		// No fetch ran or may run now: answer from what is held.
		if ks := s.keys.Load(); ks != nil {
			return match(*ks, kid), nil
		}
		return nil, ErrUnavailable
	}
	ks := s.keys.Load()
	if ks == nil {
		return nil, ErrUnavailable
	}
	return match(*ks, kid), nil
}

func match(ks []Key, kid string) []Key {
	if kid == "" {
		return ks
	}
	for i := range ks {
		if ks[i].KID == kid {
			// Key IDs are unique in practice; a set repeating one is
			// answered with every key of that ID.
			j := i + 1
			for j < len(ks) && ks[j].KID == kid {
				j++
			}
			if j == i+1 {
				return ks[i : i+1 : i+1]
			}
			var out []Key
			for _, k := range ks[i:] {
				if k.KID == kid {
					out = append(out, k)
				}
			}
			return out
		}
	}
	return nil
}

// missRefresh waits for a fetch under way, or starts one when the miss
// budget allows; false when neither happened.
func (s *Set) missRefresh(ctx context.Context) bool {
	s.mu.Lock()
	ch := s.inflight
	if ch == nil {
		now := time.Now()
		if !s.lastMiss.IsZero() && now.Sub(s.lastMiss) < s.opt.MinMissInterval {
			s.mu.Unlock()
			return false
		}
		s.lastMiss = now
		ch = s.launchLocked()
	}
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
	return true
}

// start begins the background refresh loop once.
func (s *Set) start() {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return
	}
	s.started = true
	first := s.launchLocked()
	s.mu.Unlock()
	go s.loop(first)
}

// launchLocked starts a fetch; s.mu must be held and no fetch under way.
func (s *Set) launchLocked() chan struct{} {
	ch := make(chan struct{})
	s.inflight = ch
	go func() {
		s.fetchOnce()
		s.mu.Lock()
		s.inflight = nil
		s.mu.Unlock()
		close(ch)
	}()
	return ch
}

func (s *Set) loop(first chan struct{}) {
	ch := first
	retry := s.opt.RetryMin
	for {
		select {
		case <-ch:
		case <-s.stop:
			return
		}
		wait := s.opt.RefreshInterval
		if st := s.Status(); st.State != StateOK {
			wait, retry = retry, min(retry*2, s.opt.RefreshInterval)
		} else {
			retry = s.opt.RetryMin
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.stop:
			t.Stop()
			return
		}
		s.mu.Lock()
		ch = s.inflight
		if ch == nil {
			ch = s.launchLocked()
		}
		s.mu.Unlock()
	}
}

// fetchOnce fetches the key set and records the outcome. Only one runs at a
// time (launchLocked is called with no fetch under way).
func (s *Set) fetchOnce() {
	ctx, cancel := context.WithTimeout(context.Background(), s.opt.FetchTimeout)
	defer cancel()
	keys, err := s.fetch(ctx)
	now := time.Now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.LastRefreshAt = &now
	if err != nil {
		s.errTotal.Inc()
		s.st.LastError = err.Error()
		if s.keys.Load() == nil {
			s.st.State = StateUnavailable
		} else {
			s.st.State = StateStale
		}
		s.up.Set(0)
		return
	}
	s.keys.Store(&keys)
	s.okTotal.Inc()
	s.st.State, s.st.LastError, s.st.Keys, s.st.LastSuccessAt = StateOK, "", len(keys), &now
	s.up.Set(1)
	s.nkeys.Set(float64(len(keys)))
}

func (s *Set) fetch(ctx context.Context) ([]Key, error) {
	uri := s.src.JWKSURI
	discovered := false
	if uri == "" {
		s.mu.Lock()
		uri = s.jwksURI
		s.mu.Unlock()
		if uri == "" {
			var err error
			if uri, err = s.discover(ctx); err != nil {
				return nil, err
			}
			s.mu.Lock()
			s.jwksURI = uri
			s.mu.Unlock()
		}
		discovered = true
	}
	body, err := get(ctx, s.opt.Client, uri)
	if err == nil {
		var keys []Key
		if keys, err = Parse(body); err == nil {
			return keys, nil
		}
	}
	if discovered {
		// Read the discovery document again next time: the key endpoint may have moved.
		s.mu.Lock()
		s.jwksURI = ""
		s.mu.Unlock()
	}
	return nil, errors.New("cannot fetch signing keys: " + err.Error())
}

// discover reads jwks_uri from the issuer's OpenID configuration. Its issuer
// must equal the configured one (OpenID Connect Discovery 1.0, 4.3).
func (s *Set) discover(ctx context.Context) (string, error) {
	body, err := get(ctx, s.opt.Client, s.src.Discovery)
	if err != nil {
		return "", errors.New("cannot read the discovery document: " + err.Error())
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", errors.New("cannot read the discovery document: not a JSON object")
	}
	if doc.Issuer != s.src.Issuer {
		return "", errors.New("the discovery document's issuer differs from the configured issuer")
	}
	u, err := url.Parse(doc.JWKSURI)
	if doc.JWKSURI == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errors.New("the discovery document has no usable jwks_uri")
	}
	return doc.JWKSURI, nil
}

// get fetches uri. Errors name neither the URL (it may hold user-info) nor
// the body.
func get(ctx context.Context, c *http.Client, uri string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, errors.New("invalid URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, errors.New("request failed: " + err.Error())
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, errors.New("HTTP " + strconv.Itoa(resp.StatusCode))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, errors.New("cannot read the answer: " + err.Error())
	}
	if len(body) > maxDocumentBytes {
		return nil, errors.New("answer larger than 1 MiB")
	}
	return body, nil
}

// Parse reads a JWK Set document and keeps its usable signing keys: RSA
// (at least MinRSABits), EC (P-256, P-384, P-521) and Ed25519 public keys
// whose use is absent or "sig". Other keys are skipped; a set with none is
// an error.
func Parse(body []byte) ([]Key, error) {
	var doc jwkset.JWKSMarshal
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, errors.New("not a JWK Set document")
	}
	var out []Key
	for _, m := range doc.Keys {
		if m.USE != "" && m.USE != jwkset.UseSig {
			continue
		}
		j, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			continue
		}
		k := Key{KID: m.KID, Alg: string(m.ALG)}
		switch pub := j.Key().(type) {
		case *rsa.PublicKey:
			if pub.N.BitLen() < MinRSABits {
				continue
			}
			k.Public = pub
		case *ecdsa.PublicKey:
			k.Public = pub
		case ed25519.PublicKey:
			k.Public = pub
		default:
			continue
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("the JWK Set holds no usable signing key")
	}
	// Keys of one kid sit together (match relies on it).
	sort.SliceStable(out, func(i, j int) bool { return out[i].KID < out[j].KID })
	return out, nil
}

// redactURL drops user-info from a URL for display.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
