// Package openai is the chat-completions adapter for OpenAI and
// OpenAI-compatible endpoints, and, with NewAzure, for Azure OpenAI. It also
// holds the response-side helpers for the chat-completions wire format that
// the edge uses on every upstream answer (RewriteModel, IsUsageOnlyChunk,
// ExtractUsage).
//
// Requests are edited on the raw bytes with gw/sse/rawjson into pooled
// buffers; BuildChat allocates nothing in steady state.
package openai

import (
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/adapters/headers"
	"gw/adapters/native"
)

// DefaultBaseURL is the api_base of an openai-adapter key without one.
const DefaultBaseURL = "https://api.openai.com/v1"

// ownedOpenAI and ownedAzure are the headers each flavour sets itself; no
// default header replaces them (see package headers for the precedence).
var (
	ownedOpenAI = []string{"authorization", "content-type", "content-length", "host", "accept-encoding"}
	ownedAzure  = []string{"api-key", "content-type", "content-length", "host", "accept-encoding"}
)

// Adapter is the compiled chat-completions adapter of one provider key.
// It is immutable and safe for concurrent use.
type Adapter struct {
	name        string // provider key display name, for String
	azure       bool
	keyProvider string

	uri       *fasthttp.URI // fixed upstream URL; nil on the dated Azure surface
	urlPrefix string        // dated Azure surface: before the deployment
	urlSuffix string        // dated Azure surface: after the deployment

	authKey    []byte // canonical header name
	authPrefix string // "Bearer " or ""
	// userInfo: api_base carries user-info, which fasthttp sends as
	// Authorization: Basic only when no Authorization is set, so the
	// Bearer credential is left out (the documented rule: user-info
	// authenticates, api_key is not sent).
	userInfo bool
	key      adapters.Secret // revealed only into the request being built

	rules  *headers.Rules
	native *native.Endpoints // nil on Azure (no native surfaces there)
	ep     endpointURLs      // embeddings, completions, rerank (endpoints.go)
	base   string            // api_base or DefaultBaseURL (not Azure): the Realtime surface's base

	body *bodyrules.Rules // the key's body rules; nil when none
	// renamesMaxCompletion: a param_renames source is max_completion_tokens.
	renamesMaxCompletion bool
	soDefault            []byte // default_body_fields.stream_options, if any

	scanKeys  []string // fixedKeys, then rename sources, then default keys
	renameIdx int
	defIdx    int
}

// Interface guards.
var (
	_ adapters.Adapter             = (*Adapter)(nil)
	_ adapters.NativeBuilder       = (*Adapter)(nil)
	_ interface{ String() string } = (*Adapter)(nil)
)

// Config is what the openai family reads of a provider key beyond
// adapters.KeyConfig: the key's `provider`. The snapshot compiler fills it.
// The body rules every family shares are adapters.KeyConfig.Body.
type Config struct {
	// Provider is the key's `provider`; a model's own provider overrides
	// it (ChatInput.Provider). It decides the developer-role and
	// max_tokens rules.
	Provider string
}

// Rename and BodyField are the shared body-rule types, under the names this
// package has always used.
type (
	Rename    = bodyrules.Rename
	BodyField = bodyrules.Field
)

// New compiles the openai adapter of provider key k with the family
// settings c: URL api_base (DefaultBaseURL when empty) + /chat/completions,
// credential `Authorization: Bearer <api_key>`.
//
// User-info in api_base is kept in the URL as written. fasthttp turns it
// into `Authorization: Basic base64(user:password)` when it writes a
// request without an Authorization header, and the Bearer credential is
// then not set, so an api_base with user-info authenticates with the
// user-info, not with api_key (the key is not sent at all).
func New(k *adapters.KeyConfig, c *Config, opts adapters.Options) (adapters.Adapter, error) {
	return newAdapter(k, c, opts, false)
}

// NewAzure compiles the azure-openai adapter of k and c: the openai adapter with
// the `api-key: <api_key>` credential, Azure's URL shapes (see azureURLs:
// the v1 surface, a deployment-scoped api_base, or the dated surface with
// the upstream model as deployment) and Azure-style body rules (developer
// becomes system; max_tokens becomes max_completion_tokens for reasoning
// models). api_base is required.
func NewAzure(k *adapters.KeyConfig, c *Config, opts adapters.Options) (adapters.Adapter, error) {
	return newAdapter(k, c, opts, true)
}

func newAdapter(k *adapters.KeyConfig, c *Config, opts adapters.Options, azure bool) (*Adapter, error) {
	a := &Adapter{
		name:        k.Name,
		azure:       azure,
		keyProvider: c.Provider,
		// model and stream belong to gw: the edge decided them.
		body: bodyrules.Compile(&k.Body, "model", "stream"),
	}
	owned := ownedOpenAI
	if azure {
		owned = ownedAzure
		if k.BaseURL == "" {
			return nil, adapters.ErrConfig
		}
		version := opts.AzureAPIVersion
		if version == "" {
			version = adapters.DefaultAzureAPIVersion
		}
		fixed, prefix, suffix, err := azureURLs(k.BaseURL, version)
		if err != nil {
			return nil, err
		}
		if fixed != "" {
			if a.uri, err = parseURI(fixed); err != nil {
				return nil, err
			}
		}
		a.urlPrefix, a.urlSuffix = prefix, suffix
		a.authKey = strAPIKey
	} else {
		base := k.BaseURL
		if base == "" {
			base = DefaultBaseURL
		}
		u, err := chatURL(base)
		if err != nil {
			return nil, err
		}
		if a.uri, err = parseURI(u); err != nil {
			return nil, err
		}
		a.authKey, a.authPrefix, a.base = strAuthorization, strBearer, base
		a.userInfo = hasUserInfo(base)
		if a.native, err = native.Compile(k, base, native.AuthBearer); err != nil {
			return nil, err
		}
	}
	if err := a.compileEndpoints(k.BaseURL, opts); err != nil {
		return nil, err
	}
	a.key = k.Credential
	rules, err := headers.Compile(&k.Headers, owned)
	if err != nil {
		return nil, err
	}
	a.rules = rules

	for _, f := range a.body.DefaultList() {
		if f.Key == "stream_options" {
			a.soDefault = f.Value
		}
	}
	a.scanKeys = append(a.scanKeys, fixedKeys[:]...)
	a.renameIdx = len(a.scanKeys)
	for _, r := range a.body.RenameList() {
		a.scanKeys = append(a.scanKeys, r.From)
		a.renamesMaxCompletion = a.renamesMaxCompletion || r.From == "max_completion_tokens"
	}
	a.defIdx = len(a.scanKeys)
	for _, f := range a.body.DefaultList() {
		a.scanKeys = append(a.scanKeys, f.Key)
	}
	return a, nil
}

func parseURI(s string) (*fasthttp.URI, error) {
	u := &fasthttp.URI{}
	if err := u.Parse(nil, []byte(s)); err != nil {
		return nil, adapters.ErrConfig
	}
	// Send the path exactly as api_base spells it.
	u.DisablePathNormalizing = true
	return u, nil
}

// String names the adapter without its credential.
func (a *Adapter) String() string {
	if a.azure {
		return "azure-openai adapter for provider key " + a.name
	}
	return "openai adapter for provider key " + a.name
}

// GoString is String, so %#v never prints the credential.
func (a *Adapter) GoString() string { return a.String() }

// NativeBase implements adapters.NativeBuilder (see adapters.KeyConfig's
// Responses and Messages).
func (a *Adapter) NativeBase(s adapters.Surface) string {
	if a.native == nil {
		return ""
	}
	return a.native.Base(s)
}

// BuildNative implements adapters.NativeBuilder: the caller's Responses or
// Messages body goes upstream with `model` rewritten and the key's body
// rules applied (see package native for which rules each surface takes);
// the openai-only edits (developer role, max_completion_tokens,
// include_usage) are chat-completions rules and stay off.
func (a *Adapter) BuildNative(req *fasthttp.Request, in *adapters.ChatInput, s adapters.Surface) error {
	if a.native == nil {
		return adapters.ErrUnsupported
	}
	return a.native.Build(req, in, s)
}

// BuildChat implements adapters.Adapter.
func (a *Adapter) BuildChat(req *fasthttp.Request, in *adapters.ChatInput) error {
	s := acquireScratch()
	defer releaseScratch(s)

	e := editor{s: s, cur: in.Body}
	if err := a.editBody(&e, in); err != nil {
		return err
	}

	req.Header.SetMethodBytes(strPost)
	if a.uri != nil {
		req.SetURI(a.uri)
	} else {
		s.url = append(s.url[:0], a.urlPrefix...)
		s.url = appendPathSegment(s.url, in.UpstreamModel)
		s.url = append(s.url, a.urlSuffix...)
		req.SetRequestURIBytes(s.url)
		// The client sends the path as written too; set it here so the
		// request describes itself the same way everywhere.
		req.URI().DisablePathNormalizing = true
	}
	req.Header.SetContentTypeBytes(strApplicationJSON)
	req.Header.SetCanonical(strAcceptEncoding, strIdentity)
	if a.sendsKey() {
		s.auth = append(append(s.auth[:0], a.authPrefix...), a.key.Reveal()...)
		req.Header.SetCanonical(a.authKey, s.auth)
	}
	s.hdr = a.rules.Apply(&req.Header, in.ClientHeaders, &in.Vars, in.CallerCredential, s.hdr)

	// Hand the edited buffer to req and keep its old body buffer instead.
	old := req.SwapBody(e.cur)
	e.giveAway(old)
	return nil
}

// policy holds the provider-dependent body rules of one request.
type policy struct {
	devToSystem   bool // developer role becomes system
	maxCompletion bool // max_tokens becomes max_completion_tokens on reasoning models
}

// policyFor applies the spec's developer-role table and the max_tokens rule:
// the `developer` role stays only for provider openai on the openai adapter;
// first-party (provider openai) and Azure-style (azure adapter, or provider
// azure / azure-openai / azure_openai) get max_completion_tokens. provider is
// the model's `provider`, falling back to the key's.
func (a *Adapter) policyFor(provider string) policy {
	if provider == "" {
		provider = a.keyProvider
	}
	first := strings.EqualFold(provider, "openai")
	azure := a.azure || isAzureProvider(provider)
	return policy{devToSystem: a.azure || !first, maxCompletion: first || azure}
}

func isAzureProvider(p string) bool {
	return strings.EqualFold(p, "azure") || strings.EqualFold(p, "azure-openai") || strings.EqualFold(p, "azure_openai")
}

// sendsKey reports whether requests carry the key's credential header: not
// a Bearer credential when api_base has user-info (see New).
func (a *Adapter) sendsKey() bool {
	return a.key.IsSet() && !(a.userInfo && a.authPrefix == strBearer)
}

// hasUserInfo reports whether a base URL carries user-info.
func hasUserInfo(base string) bool {
	u, err := url.Parse(base)
	return err == nil && u.User != nil
}
