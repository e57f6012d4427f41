// Package headers compiles the header policy of one provider key
// (request.default_headers and request.forward_client_headers, as Config)
// into Rules that an adapter applies to every upstream request without
// allocating.
//
// # Precedence
//
// Highest first; a higher rule replaces what a lower one wrote:
//
//  1. A client header in a credential slot (authorization, x-api-key,
//     api-key, cookie, proxy-authorization) that forward_client_headers names
//     exactly, unless that slot carried the caller's own gw credential
//     (see Apply's noRelay). Such a header even replaces the credential the
//     adapter set: naming a credential slot is how an operator asks for
//     bring-your-own-key relaying.
//  2. Headers the adapter sets itself (its owned list: the credential,
//     content-type, content-length, host, accept-encoding ...). No default
//     header and no other forwarded header can replace them.
//  3. Default headers outside credential slots. A default header whose
//     template variable is empty (or holds CR, LF or NUL) is dropped, and the
//     forwarded client value, if any, stays.
//  4. Forwarded client headers outside credential slots (exact names or one
//     '*' glob, case-insensitive). Every value of a repeated header is kept.
//  5. Default headers in credential slots the adapter does not own (for
//     example a default x-api-key on an openai key).
//
// Never relayed from the client whatever the configuration: NeverRelayed
// (host, hop-by-hop, x-gw-*, content-type, content-length, accept,
// accept-encoding, content-encoding, expect, set-cookie, anthropic-version,
// x-stainless-*). Credential slots and traceparent/tracestate are relayed
// only when named exactly, never through a glob. Default headers named host,
// hop-by-hop or x-gw-* are dropped (AlwaysDropped).
package headers

import (
	"errors"
	"strings"

	"github.com/valyala/fasthttp"
)

// Slots is a set of credential slots.
type Slots uint8

// Credential slots: headers that carry credentials. They are relayed only
// when forward_client_headers names them exactly.
const (
	SlotAuthorization Slots = 1 << iota
	SlotXAPIKey
	SlotAPIKey
	SlotCookie
	SlotProxyAuthorization
)

// SlotOf returns the credential slot of the lowercase header name h, or 0.
func SlotOf(h string) Slots {
	switch h {
	case "authorization":
		return SlotAuthorization
	case "x-api-key":
		return SlotXAPIKey
	case "api-key":
		return SlotAPIKey
	case "cookie":
		return SlotCookie
	case "proxy-authorization":
		return SlotProxyAuthorization
	}
	return 0
}

// exactOnly reports names relayed only when named exactly: credential slots
// and the W3C trace context pair.
func exactOnly(h string) bool {
	return SlotOf(h) != 0 || h == "traceparent" || h == "tracestate"
}

// Vars holds the per-request values of default-header variables, indexed by
// Var (vars[VarAPIKeyTeamID] = teamID). An empty value drops every default
// header that uses it.
type Vars [16]string

// ErrBadPattern is returned by Compile for a forward_client_headers entry
// with more than one '*' or an empty name.
var ErrBadPattern = errors.New("headers: invalid forward_client_headers entry")

// ErrBadVar is returned by Compile for a template variable outside Vars.
var ErrBadVar = errors.New("headers: default header uses an unknown request variable")

type action uint8

const (
	actDrop    action = iota
	actForward        // relay, outside credential slots (precedence 4)
	actCred           // relay a credential slot named exactly (precedence 1)
)

type rule struct {
	act  action
	slot Slots
}

type glob struct{ prefix, suffix string }

func (g glob) match(h string) bool {
	return len(h) >= len(g.prefix)+len(g.suffix) &&
		strings.HasPrefix(h, g.prefix) && strings.HasSuffix(h, g.suffix)
}

type part struct {
	lit []byte
	v   Var // VarNone for literal parts
}

type template struct {
	key   []byte // canonical spelling, for SetCanonical
	slot  Slots
	parts []part
}

// Rules is the compiled header policy of one provider key. It is immutable
// and safe for concurrent use.
type Rules struct {
	// named holds a decision for every name that does not go through the
	// globs: exact entries, owned names and exact-only names.
	named        map[string]rule
	globs        []glob
	forwardAny   bool // some client header may be relayed
	credDefaults []template
	defaults     []template
}

// Compile builds the Rules of c. owned lists the lowercase names the adapter
// sets itself; neither default nor forwarded headers replace them, except a
// credential slot named exactly in forward_client_headers (precedence 1).
// Entries the loader would reject (never-relayed exact names) are dropped
// here too, so Rules are safe whatever the input.
func Compile(c *Config, owned []string) (*Rules, error) {
	r := &Rules{named: make(map[string]rule)}
	isOwned := func(h string) bool {
		for _, o := range owned {
			if o == h {
				return true
			}
		}
		return false
	}
	for _, o := range owned {
		r.named[o] = rule{act: actDrop}
	}
	for _, h := range []string{"authorization", "x-api-key", "api-key", "cookie", "proxy-authorization", "traceparent", "tracestate"} {
		if _, ok := r.named[h]; !ok {
			r.named[h] = rule{act: actDrop}
		}
	}
	for _, h := range c.ForwardClientHeaders {
		h = lowerString(strings.TrimSpace(h))
		switch n := strings.Count(h, "*"); {
		case h == "" || n > 1:
			return nil, ErrBadPattern
		case n == 1:
			i := strings.IndexByte(h, '*')
			r.globs = append(r.globs, glob{prefix: h[:i], suffix: h[i+1:]})
			r.forwardAny = true
			continue
		}
		slot := SlotOf(h)
		switch {
		case NeverRelayed(h):
			r.named[h] = rule{act: actDrop}
		case slot != 0:
			r.named[h] = rule{act: actCred, slot: slot}
			r.forwardAny = true
		case isOwned(h):
			// Owned outside credential slots: the adapter's value stands.
		default:
			r.named[h] = rule{act: actForward}
			r.forwardAny = true
		}
	}
	for _, t := range c.DefaultHeaders {
		name := lowerString(t.Name)
		if name == "" || AlwaysDropped(name) || isOwned(name) {
			continue
		}
		ct := template{key: fasthttp.AppendNormalizedHeaderKey(nil, name), slot: SlotOf(name)}
		for _, p := range t.Parts {
			if p.Var != VarNone {
				if int(p.Var) >= len(Vars{}) {
					return nil, ErrBadVar
				}
				ct.parts = append(ct.parts, part{v: p.Var})
				continue
			}
			if p.Literal != "" {
				ct.parts = append(ct.parts, part{lit: []byte(p.Literal)})
			}
		}
		if ct.slot != 0 {
			r.credDefaults = append(r.credDefaults, ct)
		} else {
			r.defaults = append(r.defaults, ct)
		}
	}
	return r, nil
}

// Forward reports whether a client header named name (any case) would be
// relayed upstream, ignoring which slot carried the caller's credential.
func (r *Rules) Forward(name []byte) bool {
	var buf [128]byte
	return r.decide(lower(buf[:0], name)).act != actDrop
}

// decide returns the rule for the lowercase name h.
func (r *Rules) decide(h []byte) rule {
	if !r.forwardAny {
		return rule{}
	}
	// m[b2s(h)] and m[string(h)] compile to the same non-allocating lookup.
	if ru, ok := r.named[string(h)]; ok {
		return ru
	}
	if len(r.globs) == 0 {
		return rule{}
	}
	s := b2s(h)
	if NeverRelayed(s) || exactOnly(s) {
		return rule{}
	}
	for _, g := range r.globs {
		if g.match(s) {
			return rule{act: actForward}
		}
	}
	return rule{}
}

// lowerString is ASCII lower-casing, as lower does per request (header
// names are ASCII tokens; strings.ToLower would also fold non-ASCII).
func lowerString(h string) string { return string(lower(nil, []byte(h))) }

// lower appends the ASCII-lowercase h to dst.
func lower(dst, h []byte) []byte {
	for _, c := range h {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// Apply writes the default and forwarded headers into dst, following the
// precedence in the package comment. Call it after the adapter has set its
// own headers. client may be nil (nothing forwarded). noRelay names the
// credential slots that carried the caller's gw credential: they are never
// relayed. scratch is a reusable buffer for template values; Apply returns it
// (possibly grown) for the next call. Apply does not allocate once dst and
// scratch have grown, except for client header names longer than 128 bytes.
func (r *Rules) Apply(dst, client *fasthttp.RequestHeader, vars *Vars, noRelay Slots, scratch []byte) []byte {
	// Precedence 5: credential-slot defaults, replaced by exact forwards.
	for i := range r.credDefaults {
		scratch = r.credDefaults[i].set(dst, vars, scratch)
	}
	if client != nil && r.forwardAny {
		var buf [128]byte
		for k, v := range client.All() {
			ru := r.decide(lower(buf[:0], k))
			switch ru.act {
			case actForward:
				dst.AddBytesKV(k, v) // precedence 4
			case actCred:
				if ru.slot&noRelay == 0 {
					dst.SetBytesKV(k, v) // precedence 1
				}
			}
		}
	}
	// Precedence 3: defaults replace forwarded values of the same name.
	for i := range r.defaults {
		scratch = r.defaults[i].set(dst, vars, scratch)
	}
	return scratch
}

// set expands t and sets it on dst; a template with an empty or unsafe
// variable value is skipped.
func (t *template) set(dst *fasthttp.RequestHeader, vars *Vars, scratch []byte) []byte {
	v := scratch[:0]
	for _, p := range t.parts {
		if p.v == VarNone {
			v = append(v, p.lit...)
			continue
		}
		s := vars[p.v]
		if s == "" || strings.ContainsAny(s, "\r\n\x00") {
			return v
		}
		v = append(v, s...)
	}
	dst.DelBytes(t.key) // every forwarded value of the name, not just the first
	dst.SetCanonical(t.key, v)
	return v
}
