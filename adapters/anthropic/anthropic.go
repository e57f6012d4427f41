// Package anthropic is the adapter of provider keys whose protocol family is
// the Anthropic Messages API: a chat-completions caller's request is
// converted to a messages request (sse/msgconv) and sent to
// <api_base>/messages with the key as `x-api-key`. The answer comes back in
// the Messages wire format; the edge converts it (Protocol reports it).
package anthropic

import (
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
	"gw/admin/resources"
	"gw/sse/msgconv"
	"gw/sse/rawjson"
)

// DefaultBaseURL is used when a key has no api_base.
const DefaultBaseURL = "https://api.anthropic.com/v1"

// Version is the anthropic-version gw sends.
const Version = "2023-06-01"

// ProtocolMessages is what Protocol reports: the upstream answers in the
// Messages wire format.
const ProtocolMessages = "messages"

var (
	owned       = []string{"x-api-key", "anthropic-version", "content-type", "content-length", "host", "accept-encoding"}
	hdrAPIKey   = []byte("x-api-key")
	hdrVersion  = []byte("anthropic-version")
	hdrBeta     = []byte("anthropic-beta")
	valVersion  = []byte(Version)
	hdrAccEnc   = []byte("Accept-Encoding")
	valIdentity = []byte("identity")
	ctJSON      = []byte("application/json")
	methodPost  = []byte("POST")
)

// Adapter is the compiled messages adapter of one provider key.
type Adapter struct {
	name  string
	url   string
	key   resources.Secret
	rules *headers.Rules
}

// Interface guards.
var (
	_ adapters.Adapter         = (*Adapter)(nil)
	_ adapters.MessagesBuilder = (*Adapter)(nil)
	_ adapters.Factory         = New
)

// New compiles the adapter of pk.
func New(pk *resources.ProviderKey, _ adapters.Options) (adapters.Adapter, error) {
	base := pk.APIBase
	if base == "" {
		base = DefaultBaseURL
	}
	rules, err := headers.Compile(&pk.Request, owned)
	if err != nil {
		return nil, err
	}
	return &Adapter{name: pk.DisplayName, url: strings.TrimSuffix(base, "/") + "/messages", key: pk.APIKey, rules: rules}, nil
}

// Protocol reports the upstream wire format of the answers.
func (a *Adapter) Protocol() string { return ProtocolMessages }

func (a *Adapter) String() string { return "anthropic adapter of provider key " + a.name }

type scratch struct {
	body []byte
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
	a.finish(req, in, s)
	return nil
}

// BuildMessages implements adapters.MessagesBuilder: the caller's Messages
// body goes upstream byte-for-byte with only `model` rewritten.
func (a *Adapter) BuildMessages(req *fasthttp.Request, in *adapters.ChatInput) error {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	body, err := rawjson.SetString(s.body[:0], in.Body, "model", in.UpstreamModel)
	if err != nil {
		return adapters.ErrBody
	}
	s.body = body
	a.finish(req, in, s)
	return nil
}

// finish writes URL, headers and the body built in s.
func (a *Adapter) finish(req *fasthttp.Request, in *adapters.ChatInput, s *scratch) {
	req.Header.SetMethodBytes(methodPost)
	req.SetRequestURI(a.url)
	req.Header.SetContentTypeBytes(ctJSON)
	req.Header.SetCanonical(hdrAccEnc, valIdentity)
	req.Header.SetBytesKV(hdrVersion, valVersion)
	if a.key.IsSet() {
		req.Header.SetBytesKV(hdrAPIKey, []byte(a.key.Reveal()))
	}
	if in.ClientHeaders != nil {
		if beta := in.ClientHeaders.PeekBytes(hdrBeta); len(beta) > 0 {
			req.Header.SetBytesKV(hdrBeta, beta) // beta features pass through to Anthropic
		}
	}
	s.hdr = a.rules.Apply(&req.Header, in.ClientHeaders, &in.Vars, in.CallerCredential, s.hdr)
	req.SetBody(s.body)
}
