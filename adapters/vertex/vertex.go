// Package vertex is the adapter of provider keys with `adapter: vertex`:
// Google Vertex AI, authenticated with an OAuth access token obtained from
// the key's credential document (credentials.go). One key serves one of
// three upstream protocols, chosen by the key's `provider` when the
// snapshot is compiled (the edge reads a key's answers in one protocol):
//
//   - provider anthropic: Claude on Vertex, rawPredict/streamRawPredict on
//     publishers/anthropic, the Messages body without `model` and with
//     anthropic_version vertex-2023-10-16. Messages callers go native
//     (their body and the upstream's events pass unchanged); chat and
//     Responses callers are converted (sse/msgconv).
//   - provider "" , google, gemini, vertex, vertex_ai: Gemini,
//     generateContent/streamGenerateContent?alt=sse on publishers/google,
//     converted by sse/gemini.
//   - any other provider (meta, mistral, deepseek, qwen, openai ...): the
//     partner and open models of Vertex's OpenAI-compatible endpoint
//     (endpoints/openapi/chat/completions), with the openai adapter's body
//     rules; model_name is sent as written (e.g. meta/llama-3.3-70b-instruct-maas).
//
// URLs are {api_base or the regional host}/v1/projects/{project}/locations/
// {location}/...; project and location come from the credential document
// (see Document).
package vertex

import (
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/anthropic"
	"gw/adapters/bodyrules"
	"gw/adapters/headers"
	"gw/adapters/openai"
	"gw/sse/gemini"
	"gw/sse/msgconv"
	"gw/sse/rawjson"
)

// ProtocolGemini is what Protocol reports for Gemini keys: the upstream
// answers in the generateContent wire format.
const ProtocolGemini = "gemini"

// AnthropicVersion is the anthropic_version of Claude-on-Vertex bodies.
const AnthropicVersion = "vertex-2023-10-16"

// Mode is the upstream protocol a key serves.
type Mode uint8

// Modes.
const (
	ModeGemini Mode = iota
	ModeClaude
	ModeOpenAI
)

// ModeOf returns the mode of a key's provider.
func ModeOf(provider string) Mode {
	switch strings.ToLower(provider) {
	case "", "google", "gemini", "vertex", "vertex_ai", "vertex-ai", "vertexai":
		return ModeGemini
	case "anthropic":
		return ModeClaude
	}
	return ModeOpenAI
}

// BaseURL returns the host root of a location: api_base when set, else
// Google's regional endpoint (global and the us/eu multi-regions have their
// own hosts).
func BaseURL(apiBase, location string) string {
	if apiBase != "" {
		return strings.TrimRight(apiBase, "/")
	}
	switch location {
	case "global":
		return "https://aiplatform.googleapis.com"
	case "us", "eu":
		return "https://aiplatform." + location + ".rep.googleapis.com"
	}
	return "https://" + location + "-aiplatform.googleapis.com"
}

// DocumentBaseURL is BaseURL for a key whose credential is doc.
func DocumentBaseURL(apiBase, doc string) (string, error) {
	if apiBase != "" {
		return BaseURL(apiBase, ""), nil
	}
	d, err := parseDocument(doc)
	if err != nil {
		return "", err
	}
	return BaseURL("", d.Location), nil
}

var (
	owned           = []string{"authorization", "anthropic-version", "content-type", "content-length", "host", "accept-encoding"}
	hdrAuth         = []byte("Authorization")
	hdrAccEnc       = []byte("Accept-Encoding")
	hdrBeta         = []byte("anthropic-beta")
	valIdentity     = []byte("identity")
	ctJSON          = []byte("application/json")
	methodPost      = []byte("POST")
	valVersion      = []byte(`"` + AnthropicVersion + `"`)
	sfxStream       = ":streamGenerateContent?alt=sse"
	sfxGenerate     = ":generateContent"
	sfxStreamRaw    = ":streamRawPredict"
	sfxRaw          = ":rawPredict"
	errNoCredential = adapters.ErrConfig
)

// Adapter is the compiled vertex adapter of one provider key.
type Adapter struct {
	name     string
	mode     Mode
	base     string // host root
	prefix   string // .../publishers/{google|anthropic}/models/
	countURL string // Claude token counting
	tok      *Tokens
	rules    *headers.Rules
	body     *bodyrules.Rules // Gemini and Claude: the key's body rules; nil when none
	chat     adapters.Adapter // ModeOpenAI: the openai adapter of the endpoint
}

// Interface guards.
var (
	_ adapters.Adapter       = (*Adapter)(nil)
	_ adapters.NativeBuilder = (*Adapter)(nil)
	_ adapters.Protocoler    = (*Adapter)(nil)
)

// New compiles the adapter of provider key k; oc carries the key's
// provider (which picks the Mode) and, for ModeOpenAI, the openai body
// rules.
func New(k *adapters.KeyConfig, oc *openai.Config, opts adapters.Options) (*Adapter, error) {
	if !k.Credential.IsSet() {
		return nil, errNoCredential
	}
	doc := k.Credential.Reveal()
	d, err := parseDocument(doc)
	if err != nil {
		return nil, err
	}
	fetch, err := newFetch(doc, d)
	if err != nil {
		return nil, err
	}
	a := &Adapter{name: k.Name, mode: ModeOf(oc.Provider), tok: newTokens(fetch)}
	a.base = BaseURL(k.BaseURL, d.Location)
	root := a.base + "/v1/projects/" + d.Project + "/locations/" + d.Location
	switch a.mode {
	case ModeGemini:
		a.prefix = root + "/publishers/google/models/"
	case ModeClaude:
		a.prefix = root + "/publishers/anthropic/models/"
		a.countURL = a.prefix + "count-tokens" + sfxRaw
	case ModeOpenAI:
		ik := *k
		ik.Credential = adapters.Secret{} // the token is set per request
		ik.BaseURL = root + "/endpoints/openapi"
		ik.Responses, ik.Messages = adapters.NativeSurface{}, adapters.NativeSurface{}
		if a.chat, err = openai.New(&ik, oc, opts); err != nil {
			return nil, err
		}
	}
	if a.rules, err = headers.Compile(&k.Headers, owned); err != nil {
		return nil, err
	}
	if a.mode != ModeOpenAI { // the openai adapter applies them itself
		// model and anthropic_version are gw's: a default cannot add them.
		a.body = bodyrules.Compile(&k.Body, "model", "stream", "anthropic_version")
	}
	return a, nil
}

// Protocol implements adapters.Protocoler.
func (a *Adapter) Protocol() string {
	switch a.mode {
	case ModeGemini:
		return ProtocolGemini
	case ModeClaude:
		return anthropic.ProtocolMessages
	}
	return ""
}

// Tokens returns the key's token cache.
func (a *Adapter) Tokens() *Tokens { return a.tok }

// String names the adapter without its credential.
func (a *Adapter) String() string { return "vertex adapter of provider key " + a.name }

// GoString is String, so %#v never prints the credential.
func (a *Adapter) GoString() string { return a.String() }

type scratch struct {
	texts [][]byte // embeddings inputs
	body  []byte
	tmp   []byte
	edit  []byte
	url   []byte
	hdr   []byte
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// BuildChat implements adapters.Adapter.
func (a *Adapter) BuildChat(req *fasthttp.Request, in *adapters.ChatInput) error {
	if a.mode == ModeOpenAI {
		if err := a.chat.BuildChat(req, in); err != nil {
			return err
		}
		return a.auth(req)
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	var err error
	if a.mode == ModeGemini {
		chat := in.Body
		var bs *bodyrules.Scratch
		if a.body != nil {
			bs = bodyrules.AcquireScratch()
			defer bodyrules.ReleaseScratch(bs)
			// Temperature bounds act on the chat body: Gemini keeps it in
			// generationConfig, out of the top-level rule's reach.
			if chat, err = a.body.Apply(chat, bodyrules.Clamp, bs); err != nil {
				return adapters.ErrBody
			}
		}
		if s.body, err = gemini.ChatRequestToGemini(s.body[:0], chat); err != nil {
			return adapters.ErrBody
		}
		if a.body != nil {
			// Renames and defaults on the Gemini body as it goes upstream
			// (safetySettings, labels, cachedContent ...); Gemini parts
			// have no string form for content_list_to_string.
			out, err := a.body.Apply(s.body, bodyrules.Renames|bodyrules.Defaults, bs)
			if err != nil {
				return adapters.ErrBody
			}
			if len(out) == 0 || len(s.body) == 0 || &out[0] != &s.body[0] {
				s.tmp = append(s.tmp[:0], out...)
				s.body, s.tmp = s.tmp, s.body
			}
		}
		sfx := sfxGenerate
		if in.Stream {
			sfx = sfxStream
		}
		s.url = appendModelURL(append(s.url[:0], a.prefix...), in.UpstreamModel, sfx)
		return a.finish(req, in, s)
	}
	opt := msgconv.RequestOptions{UpstreamModel: in.UpstreamModel}
	switch in.PromptCacheTTL {
	case "5m":
		opt.AutoCache = msgconv.AutoCache5m
	case "1h":
		opt.AutoCache = msgconv.AutoCache1h
	}
	if s.tmp, err = msgconv.ChatRequestToMessages(s.tmp[:0], in.Body, opt); err != nil {
		return adapters.ErrBody
	}
	return a.claude(req, in, s, s.tmp, adapters.SurfaceMessages)
}

// NativeBase implements adapters.NativeBuilder: Claude keys serve Messages
// and count_tokens natively.
func (a *Adapter) NativeBase(s adapters.Surface) string {
	if a.mode == ModeClaude && (s == adapters.SurfaceMessages || s == adapters.SurfaceCountTokens) {
		return a.base
	}
	return ""
}

// BuildNative implements adapters.NativeBuilder: the caller's Messages body
// goes to rawPredict/streamRawPredict without `model` and with
// anthropic_version; a count_tokens body keeps `model` (the upstream's).
func (a *Adapter) BuildNative(req *fasthttp.Request, in *adapters.ChatInput, sf adapters.Surface) error {
	if a.NativeBase(sf) == "" {
		return adapters.ErrUnsupported
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	return a.claude(req, in, s, in.Body, sf)
}

// claudeRules are the body rules each Claude surface applies (as the
// anthropic family's native surfaces do).
var claudeRules = [adapters.NumSurfaces]bodyrules.Set{
	adapters.SurfaceMessages:    bodyrules.All,
	adapters.SurfaceCountTokens: bodyrules.Flatten | bodyrules.Renames,
}

// claude finishes a Claude request whose Messages body is body (never one
// of s's buffers but s.tmp).
func (a *Adapter) claude(req *fasthttp.Request, in *adapters.ChatInput, s *scratch, body []byte, sf adapters.Surface) error {
	var err error
	if a.body != nil {
		// The rules act on the Messages body as it goes upstream, after
		// gw's conversion, as on adapter anthropic keys.
		bs := bodyrules.AcquireScratch()
		defer bodyrules.ReleaseScratch(bs)
		if body, err = a.body.Apply(body, claudeRules[sf], bs); err != nil {
			return adapters.ErrBody
		}
	}
	if sf == adapters.SurfaceCountTokens {
		s.edit, err = rawjson.SetString(s.edit[:0], body, "model", in.UpstreamModel)
		s.url = append(s.url[:0], a.countURL...)
	} else {
		s.edit, err = rawjson.Delete(s.edit[:0], body, "model")
		sfx := sfxRaw
		if in.Stream {
			sfx = sfxStreamRaw
		}
		s.url = appendModelURL(append(s.url[:0], a.prefix...), in.UpstreamModel, sfx)
	}
	if err != nil {
		return adapters.ErrBody
	}
	if s.body, err = rawjson.Set(s.body[:0], s.edit, "anthropic_version", valVersion); err != nil {
		return adapters.ErrBody
	}
	if in.ClientHeaders != nil {
		if beta := in.ClientHeaders.PeekBytes(hdrBeta); len(beta) > 0 {
			req.Header.SetBytesKV(hdrBeta, beta)
		}
	}
	return a.finish(req, in, s)
}

// finish writes method, URL (s.url), headers and body (s.body).
func (a *Adapter) finish(req *fasthttp.Request, in *adapters.ChatInput, s *scratch) error {
	req.Header.SetMethodBytes(methodPost)
	req.SetRequestURIBytes(s.url)
	req.URI().DisablePathNormalizing = true
	req.Header.SetContentTypeBytes(ctJSON)
	req.Header.SetCanonical(hdrAccEnc, valIdentity)
	if err := a.auth(req); err != nil {
		return err
	}
	s.hdr = a.rules.Apply(&req.Header, in.ClientHeaders, &in.Vars, in.CallerCredential, s.hdr)
	req.SetBody(s.body)
	return nil
}

// auth sets the access token.
func (a *Adapter) auth(req *fasthttp.Request) error {
	h, err := a.tok.Header()
	if err != nil {
		return err
	}
	req.Header.SetCanonical(hdrAuth, h)
	return nil
}

// appendModelURL appends the model as one path segment (characters outside
// the unreserved set and '@' percent-encoded) and the method suffix.
func appendModelURL(dst []byte, model, suffix string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(model); i++ {
		c := model[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '@' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', hex[c>>4], hex[c&15])
	}
	return append(dst, suffix...)
}
