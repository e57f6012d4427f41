// Package anthropic is the adapter of provider keys whose protocol family is
// the Anthropic Messages API: a chat-completions caller's request is
// converted to a messages request (sse/msgconv) and sent to
// <api_base>/messages with the key as `x-api-key`. The answer comes back in
// the Messages wire format; the edge converts it (Protocol reports it).
package anthropic

import (
	"sync"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/adapters/headers"
	"gw/adapters/native"
	"gw/sse/msgconv"
)

// DefaultBaseURL is used when a key has no api_base.
const DefaultBaseURL = "https://api.anthropic.com/v1"

// Version is the anthropic-version gw sends.
const Version = native.AnthropicVersion

// ProtocolMessages is what Protocol reports: the upstream answers in the
// Messages wire format.
const ProtocolMessages = "messages"

var (
	owned       = []string{"x-api-key", "anthropic-version", "content-type", "content-length", "host", "accept-encoding"}
	hdrAPIKey   = []byte("x-api-key")
	hdrAccEnc   = []byte("Accept-Encoding")
	valIdentity = []byte("identity")
	ctJSON      = []byte("application/json")
	methodPost  = []byte("POST")
)

// Adapter is the compiled messages adapter of one provider key.
type Adapter struct {
	name   string
	url    string
	key    adapters.Secret
	rules  *headers.Rules
	native *native.Endpoints
	body   *bodyrules.Rules // the key's body rules, on the Messages body; nil when none
}

// Interface guards.
var (
	_ adapters.Adapter       = (*Adapter)(nil)
	_ adapters.NativeBuilder = (*Adapter)(nil)
)

// New compiles the adapter of provider key k. The family has no settings of
// its own: anthropic-version is Version, and the caller's anthropic-beta
// passes through (native.SetMessagesHeaders). The key's body rules
// (k.Body) apply to the Messages body gw sends, converted or native.
func New(k *adapters.KeyConfig, _ adapters.Options) (adapters.Adapter, error) {
	base := k.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	rules, err := headers.Compile(&k.Headers, owned)
	if err != nil {
		return nil, err
	}
	url, err := adapters.JoinURL(base, "/messages")
	if err != nil {
		return nil, err
	}
	nat, err := native.Compile(k, base, native.AuthXAPIKey)
	if err != nil {
		return nil, err
	}
	return &Adapter{name: k.Name, url: url, key: k.Credential, rules: rules, native: nat,
		body: bodyrules.Compile(&k.Body, "model", "stream")}, nil
}

// Protocol reports the upstream wire format of the answers.
func (a *Adapter) Protocol() string { return ProtocolMessages }

// String names the adapter without its credential.
func (a *Adapter) String() string { return "anthropic adapter of provider key " + a.name }

// GoString is String, so %#v never prints the credential.
func (a *Adapter) GoString() string { return a.String() }

type scratch struct {
	body []byte
	key  []byte
	hdr  []byte
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// BuildChat implements adapters.Adapter: the chat-completions body becomes a
// messages request (system and developer messages merged into `system`,
// tools, tool_choice, images, stop sequences, max_tokens default 4096,
// auto_prompt_caching breakpoints when the target model asks for them).
func (a *Adapter) BuildChat(req *fasthttp.Request, in *adapters.ChatInput) error {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	opt := msgconv.RequestOptions{UpstreamModel: in.UpstreamModel}
	switch in.PromptCacheTTL {
	case "5m":
		opt.AutoCache = msgconv.AutoCache5m
	case "1h":
		opt.AutoCache = msgconv.AutoCache1h
	}
	body, err := msgconv.ChatRequestToMessages(s.body[:0], in.Body, opt)
	if err != nil {
		return adapters.ErrBody
	}
	s.body = body
	if a.body != nil {
		// The rules act on the Messages body as it goes upstream: after the
		// conversion (which bounds temperature to Anthropic's 0..1), so a
		// temperature_max below 1 still has the last word, as param_renames
		// does over every member gw wrote.
		bs := bodyrules.AcquireScratch()
		defer bodyrules.ReleaseScratch(bs)
		if body, err = a.body.Apply(body, bodyrules.All, bs); err != nil {
			return adapters.ErrBody
		}
	}
	a.finish(req, in, s, body)
	return nil
}

// NativeBase implements adapters.NativeBuilder: messages and count_tokens
// always; responses when `apis.responses` says so.
func (a *Adapter) NativeBase(s adapters.Surface) string { return a.native.Base(s) }

// BuildNative implements adapters.NativeBuilder: the caller's body goes
// upstream byte-for-byte with only `model` rewritten.
func (a *Adapter) BuildNative(req *fasthttp.Request, in *adapters.ChatInput, s adapters.Surface) error {
	return a.native.Build(req, in, s)
}

// finish writes URL, headers and body (built in s or in the body rules'
// scratch; SetBody copies it).
func (a *Adapter) finish(req *fasthttp.Request, in *adapters.ChatInput, s *scratch, body []byte) {
	req.Header.SetMethodBytes(methodPost)
	req.SetRequestURI(a.url)
	req.Header.SetContentTypeBytes(ctJSON)
	req.Header.SetCanonical(hdrAccEnc, valIdentity)
	native.SetMessagesHeaders(&req.Header, in.ClientHeaders)
	if a.key.IsSet() {
		s.key = append(s.key[:0], a.key.Reveal()...)
		req.Header.SetBytesKV(hdrAPIKey, s.key)
	}
	s.hdr = a.rules.Apply(&req.Header, in.ClientHeaders, &in.Vars, in.CallerCredential, s.hdr)
	req.SetBody(body)
}
