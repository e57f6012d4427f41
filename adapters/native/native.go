// Package native builds upstream requests for the caller surfaces a provider
// key serves in the caller's own wire format (POST /v1/responses,
// /v1/messages, /v1/messages/count_tokens): the caller's body goes upstream
// unchanged but for `model` and the key's body rules (package bodyrules),
// with the key's credential and header rules.
//
// Which surfaces are native, and at which base URL, is the `apis` rule of
// the provider key, resolved by the snapshot compiler into
// adapters.KeyConfig (Responses, Messages). Endpoints are compiled
// once per key when a snapshot is compiled; Build allocates nothing in
// steady state.
package native

import (
	"net/url"
	"sync"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/adapters/headers"
	"gw/sse/rawjson"
)

// AnthropicVersion is the anthropic-version gw sends on Messages surfaces.
const AnthropicVersion = "2023-06-01"

// Auth selects the credential headers of a key's native requests.
type Auth uint8

const (
	// AuthBearer sends `Authorization: Bearer <api_key>` (OpenAI family).
	AuthBearer Auth = 1 << iota
	// AuthXAPIKey sends `x-api-key: <api_key>` (Anthropic). Messages
	// surfaces always carry it: it is the Messages API's own credential,
	// and Anthropic-compatible endpoints of OpenAI-style providers read it.
	AuthXAPIKey
)

// owned are the headers Build sets itself; no default or forwarded header
// replaces them (see package headers for the precedence).
var owned = []string{"authorization", "x-api-key", "anthropic-version", "content-type", "content-length", "host", "accept-encoding"}

var (
	hdrAuthorization = []byte("Authorization")
	hdrAPIKey        = []byte("x-api-key")
	hdrVersion       = []byte("anthropic-version")
	hdrBeta          = []byte("anthropic-beta")
	hdrAccEnc        = []byte("Accept-Encoding")
	valVersion       = []byte(AnthropicVersion)
	valIdentity      = []byte("identity")
	ctJSON           = []byte("application/json")
	methodPost       = []byte("POST")
	bearer           = "Bearer "
)

// paths are appended to a surface's base URL.
var paths = [adapters.NumSurfaces]string{
	adapters.SurfaceResponses:   "/responses",
	adapters.SurfaceMessages:    "/messages",
	adapters.SurfaceCountTokens: "/messages/count_tokens",
}

// Endpoints are the native surfaces of one provider key. Immutable.
type Endpoints struct {
	bases [adapters.NumSurfaces]string // "" when the surface is converted
	urls  [adapters.NumSurfaces]string
	// userInfo: the surface's base carries user-info, sent as Basic by
	// fasthttp only without an Authorization header (it wins over a Bearer key).
	userInfo [adapters.NumSurfaces]bool
	auth     Auth
	key      adapters.Secret
	rules    *headers.Rules
	body     *bodyrules.Rules // the key's body rules; nil when none
}

// Compile resolves the native surfaces of k. base is the key's chat base
// URL (api_base or the adapter family's default); a surface's own Base
// (`apis.<surface>.base`) replaces it for that surface.
func Compile(k *adapters.KeyConfig, base string, auth Auth) (*Endpoints, error) {
	e := &Endpoints{auth: auth, key: k.Credential, body: bodyrules.Compile(&k.Body, "model", "stream")}
	set := func(s adapters.Surface, b string) error {
		if b == "" {
			b = base
		}
		u, err := adapters.JoinURL(b, paths[s])
		if err != nil {
			return err
		}
		e.bases[s], e.urls[s] = b, u
		if pu, err := url.Parse(b); err == nil && pu.User != nil {
			e.userInfo[s] = true
		}
		return nil
	}
	if k.Responses.On {
		if err := set(adapters.SurfaceResponses, k.Responses.Base); err != nil {
			return nil, err
		}
	}
	if k.Messages.On {
		if err := set(adapters.SurfaceMessages, k.Messages.Base); err != nil {
			return nil, err
		}
		if err := set(adapters.SurfaceCountTokens, k.Messages.Base); err != nil {
			return nil, err
		}
	}
	rules, err := headers.Compile(&k.Headers, owned)
	if err != nil {
		return nil, err
	}
	e.rules = rules
	return e, nil
}

// String describes the endpoints without the credential.
func (e *Endpoints) String() string { return "native endpoints" }

// GoString is String, so %#v never prints the credential.
func (e *Endpoints) GoString() string { return e.String() }

// Base returns the base URL of surface s, "" when s is not native.
func (e *Endpoints) Base(s adapters.Surface) string {
	if s >= adapters.NumSurfaces {
		return ""
	}
	return e.bases[s]
}

// surfaceRules are the body rules each native surface applies: all of them
// on Messages and Responses (content_list_to_string finds no
// messages[*].content in a Responses body and changes nothing); on
// count_tokens only those that keep it a count of the same conversation —
// the endpoint takes no sampling or generation members, so a clamp has
// nothing to act on and a default field would make it fail.
var surfaceRules = [adapters.NumSurfaces]bodyrules.Set{
	adapters.SurfaceResponses:   bodyrules.All,
	adapters.SurfaceMessages:    bodyrules.All,
	adapters.SurfaceCountTokens: bodyrules.Flatten | bodyrules.Renames,
}

type scratch struct {
	body []byte
	auth []byte
	key  []byte
	hdr  []byte
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Build writes the request of a native call: in.Body with `model` set to
// in.UpstreamModel and the key's body rules applied (surfaceRules), POSTed to the surface's URL with the key's credential,
// anthropic-version and the caller's anthropic-beta on Messages surfaces,
// then the key's default and forwarded headers.
func (e *Endpoints) Build(req *fasthttp.Request, in *adapters.ChatInput, s adapters.Surface) error {
	if e.Base(s) == "" {
		return adapters.ErrUnsupported
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	body, err := rawjson.SetString(sc.body[:0], in.Body, "model", in.UpstreamModel)
	if err != nil {
		return adapters.ErrBody
	}
	sc.body = body
	if set := surfaceRules[s]; e.body.Has(set) {
		bs := bodyrules.AcquireScratch()
		defer bodyrules.ReleaseScratch(bs)
		if body, err = e.body.Apply(sc.body, set, bs); err != nil {
			return adapters.ErrBody
		}
	}
	req.Header.SetMethodBytes(methodPost)
	req.SetRequestURI(e.urls[s])
	req.URI().DisablePathNormalizing = true // the path exactly as the base spells it
	req.Header.SetContentTypeBytes(ctJSON)
	req.Header.SetCanonical(hdrAccEnc, valIdentity)
	auth := e.auth
	if s == adapters.SurfaceMessages || s == adapters.SurfaceCountTokens {
		auth |= AuthXAPIKey
		SetMessagesHeaders(&req.Header, in.ClientHeaders)
	}
	if e.key.IsSet() {
		if auth&AuthBearer != 0 && !e.userInfo[s] { // user-info: fasthttp sends Basic from it instead
			sc.auth = append(append(sc.auth[:0], bearer...), e.key.Reveal()...)
			req.Header.SetCanonical(hdrAuthorization, sc.auth)
		}
		if auth&AuthXAPIKey != 0 {
			sc.key = append(sc.key[:0], e.key.Reveal()...)
			req.Header.SetBytesKV(hdrAPIKey, sc.key)
		}
	}
	sc.hdr = e.rules.Apply(&req.Header, in.ClientHeaders, &in.Vars, in.CallerCredential, sc.hdr)
	req.SetBody(body)
	return nil
}

// SetMessagesHeaders sets what every Messages API request carries besides
// its credential: gw's anthropic-version, and the caller's anthropic-beta
// (beta features pass through; the caller's anthropic-version does not).
func SetMessagesHeaders(h *fasthttp.RequestHeader, client *fasthttp.RequestHeader) {
	h.SetBytesKV(hdrVersion, valVersion)
	if client != nil {
		if beta := client.PeekBytes(hdrBeta); len(beta) > 0 {
			h.SetBytesKV(hdrBeta, beta)
		}
	}
}
