// Package bedrock is the adapter of provider keys with `adapter: bedrock`:
// a chat-completions caller's request becomes an AWS Bedrock Converse
// request (sse/converse) sent to <base>/model/{modelId}/converse, or
// /converse-stream for streams, signed with SigV4 (signing name bedrock).
// The answer comes back as a Converse body or a binary event stream; the
// edge converts it (Protocol reports ProtocolConverse).
//
// Converse is the only path: it carries text, images, documents, tools,
// tool results, reasoning (with signatures, for Claude) and cache points
// for every model family, so gw does not use InvokeModel's
// Anthropic-native body (see docs/providers/bedrock.md for the one spec
// row this leaves open).
package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/adapters/headers"
	"gw/sse/converse"
)

// ProtocolConverse is what Protocol reports: answers are Converse bodies
// and ConverseStream event streams.
const ProtocolConverse = "bedrock-converse"

// SigningName is the SigV4 service name of bedrock-runtime.
const SigningName = "bedrock"

// owned are the headers the adapter sets itself; forwarded and default
// headers never replace them.
var owned = []string{"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256", "content-type", "content-length", "host", "accept", "accept-encoding"}

var (
	ctJSON         = []byte("application/json")
	ctEventStream  = []byte("application/vnd.amazon.eventstream")
	hdrAccept      = []byte("Accept")
	hdrAccEnc      = []byte("Accept-Encoding")
	hdrAuth        = []byte("Authorization")
	hdrDate        = []byte("X-Amz-Date")
	hdrToken       = []byte("X-Amz-Security-Token")
	valIdentity    = []byte("identity")
	methodPost     = []byte("POST")
	prefixAmz      = []byte("x-amz-")
	errNoRegion    = errors.New("bedrock: no region: set `region` in the credential document or AWS_REGION")
	errCredentials = errors.New("bedrock: cannot read the credential document: it must be a JSON object with access_key_id, secret_access_key, optional session_token and region")
)

// Adapter is the compiled Bedrock adapter of one provider key.
type Adapter struct {
	name   string
	base   string // scheme://host[/prefix], no trailing slash
	host   string
	region string
	creds  aws.CredentialsProvider
	signer *v4.Signer
	rules  *headers.Rules
	body   *bodyrules.Rules // the key's body rules; nil when none
	now    func() time.Time
}

var (
	_ adapters.Adapter    = (*Adapter)(nil)
	_ adapters.Protocoler = (*Adapter)(nil)
)

// Options are the family's compile-time settings (tests).
type Options struct {
	// Now replaces time.Now for the signature time.
	Now func() time.Time
	// Env replaces os.LookupEnv when the key has no credential document.
	Env func(string) (string, bool)
}

// New compiles the adapter of provider key k: credentials and region from
// the key's JSON credential document, or the standard AWS chain (see
// Credentials); the base URL is api_base as written, or the regional
// runtime endpoint.
func New(k *adapters.KeyConfig, _ adapters.Options) (adapters.Adapter, error) {
	return NewWith(k, Options{})
}

// NewWith is New with family options.
func NewWith(k *adapters.KeyConfig, o Options) (*Adapter, error) {
	creds, region, err := Credentials(k.Credential, o.Env)
	if err != nil {
		return nil, err
	}
	base := k.BaseURL
	if base == "" {
		base = DefaultBaseURL(region)
	}
	pre, query, err := adapters.SplitBase(base)
	if err != nil {
		return nil, err
	}
	if query != "" {
		return nil, errors.New("bedrock: api_base cannot carry a query: " + adapters.ErrConfig.Error())
	}
	u, err := url.Parse(pre)
	if err != nil {
		return nil, adapters.ErrConfig
	}
	rules, err := headers.Compile(&k.Headers, owned)
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Adapter{name: k.Name, base: pre, host: u.Host, region: region, creds: creds,
		signer: v4.NewSigner(), rules: rules, now: now, body: bodyrules.Compile(&k.Body)}, nil
}

// DefaultBaseURL is the regional bedrock-runtime endpoint.
func DefaultBaseURL(region string) string {
	return "https://bedrock-runtime." + region + ".amazonaws.com"
}

// Protocol reports the upstream wire format of the answers.
func (a *Adapter) Protocol() string { return ProtocolConverse }

// Region is the signature's region.
func (a *Adapter) Region() string { return a.region }

// String names the adapter without its credential.
func (a *Adapter) String() string { return "bedrock adapter of provider key " + a.name }

// GoString is String, so %#v never prints the credential.
func (a *Adapter) GoString() string { return a.String() }

// scratch is the per-request state, pooled.
type scratch struct {
	body  []byte
	tmp   []byte
	texts [][]byte // embeddings inputs
	url   []byte
	hdr   []byte
	hreq  http.Request
	hurl  url.URL
}

var scratchPool = sync.Pool{New: func() any {
	s := new(scratch)
	s.hreq.Header = make(http.Header, 4)
	return s
}}

// BuildChat implements adapters.Adapter.
func (a *Adapter) BuildChat(req *fasthttp.Request, in *adapters.ChatInput) error {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	model := in.UpstreamModel
	chat := in.Body
	var bs *bodyrules.Scratch
	if a.body != nil {
		bs = bodyrules.AcquireScratch()
		defer bodyrules.ReleaseScratch(bs)
		// The temperature bounds act on the caller's chat body: Converse
		// keeps temperature in inferenceConfig, where the top-level rule
		// cannot reach, and the conversion only narrows it further.
		var err error
		if chat, err = a.body.Apply(chat, bodyrules.Clamp, bs); err != nil {
			return adapters.ErrBody
		}
	}
	body, err := converse.ChatRequestToConverse(s.body[:0], chat, converse.RequestOptions{Anthropic: IsAnthropic(model)})
	if err != nil {
		return adapters.ErrBody
	}
	s.body = body
	if a.body != nil {
		// param_renames and default_body_fields act on the Converse body
		// as it goes upstream (e.g. additionalModelRequestFields,
		// guardrailConfig); content_list_to_string has no Converse form.
		out, err := a.body.Apply(body, bodyrules.Renames|bodyrules.Defaults, bs)
		if err != nil {
			return adapters.ErrBody
		}
		if len(out) == 0 || len(body) == 0 || &out[0] != &body[0] {
			s.tmp = append(s.tmp[:0], out...)
			s.body, s.tmp = s.tmp, s.body
		}
	}
	op := "/converse"
	if in.Stream {
		op = "/converse-stream"
	}
	return a.send(req, in, s, model, op, in.Stream)
}

// send writes method, URL (<base>/model/{model}{op}), headers, the SigV4
// signature and the body (s.body) of a request.
func (a *Adapter) send(req *fasthttp.Request, in *adapters.ChatInput, s *scratch, model, op string, stream bool) error {
	// The path as it goes on the wire: the model id escaped as AWS SDKs do
	// (everything but unreserved characters), so ARNs and inference-profile
	// ids with ':' and '/' stay one segment.
	prefix := a.base[len(a.base)-len(pathOf(a.base)):]
	s.url = append(append(s.url[:0], a.base...), "/model/"...)
	s.url = appendEscaped(s.url, model)
	s.url = append(s.url, op...)

	req.Header.SetMethodBytes(methodPost)
	req.SetRequestURIBytes(s.url)
	req.URI().DisablePathNormalizing = true // keep %3A / %2F as signed
	req.Header.SetContentTypeBytes(ctJSON)
	if stream {
		req.Header.SetBytesKV(hdrAccept, ctEventStream)
	} else {
		req.Header.SetBytesKV(hdrAccept, ctJSON)
	}
	req.Header.SetCanonical(hdrAccEnc, valIdentity)
	s.hdr = a.rules.Apply(&req.Header, in.ClientHeaders, &in.Vars, in.CallerCredential, s.hdr)
	dropSignatureHeaders(&req.Header)

	if err := a.sign(s, req, prefix, model, op); err != nil {
		return err
	}
	req.SetBody(s.body)
	return nil
}

// pathOf returns the path part of an absolute base URL ("" when none).
func pathOf(base string) string {
	i := strings.Index(base, "://")
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(base[i+3:], '/')
	if j < 0 {
		return ""
	}
	return base[i+3+j:]
}

// sign computes the SigV4 headers with the SDK's signer over the method,
// the wire path, host, content-type and the body hash, and sets them.
func (a *Adapter) sign(s *scratch, req *fasthttp.Request, prefix, model, op string) error {
	ctx := context.Background()
	cr, err := a.creds.Retrieve(ctx)
	if err != nil {
		return credError(a.name)
	}
	sum := sha256.Sum256(s.body)
	var hexSum [64]byte
	hex.Encode(hexSum[:], sum[:])
	s.hurl = url.URL{Scheme: "https", Host: a.host, Path: prefix + "/model/" + model + op, RawPath: prefix + "/model/" + escape(model) + op}
	h := s.hreq.Header
	clear(h)
	h["Content-Type"] = contentTypeJSON
	s.hreq.Method = http.MethodPost
	s.hreq.URL = &s.hurl
	s.hreq.Host = a.host
	if err := a.signer.SignHTTP(ctx, cr, &s.hreq, string(hexSum[:]), SigningName, a.region, a.now().UTC()); err != nil {
		return errors.New("bedrock: cannot sign the request: " + err.Error())
	}
	req.Header.Set("Authorization", h.Get("Authorization"))
	req.Header.Set("X-Amz-Date", h.Get("X-Amz-Date"))
	if t := h.Get("X-Amz-Security-Token"); t != "" {
		req.Header.Set("X-Amz-Security-Token", t)
	}
	return nil
}

var contentTypeJSON = []string{"application/json"}

// credError is a failed credential lookup (an instance role or SSO
// endpoint down): adapters.ErrCredential, so the edge fails the attempt
// over to another target. It never carries the SDK's text.
type credError string

func (e credError) Error() string {
	return "bedrock: cannot retrieve AWS credentials for provider key " + string(e)
}
func (e credError) Unwrap() error { return adapters.ErrCredential }

// dropSignatureHeaders removes forwarded or default headers that would
// clash with the signature: Authorization and every x-amz-* name (AWS
// requires x-amz-* headers to be signed; gw signs only its own).
func dropSignatureHeaders(h *fasthttp.RequestHeader) {
	h.DelBytes(hdrAuth)
	h.DelBytes(hdrDate)
	h.DelBytes(hdrToken)
	var names [8][]byte
	n := 0
	for k := range h.All() {
		if len(k) >= len(prefixAmz) && strings.EqualFold(string(k[:len(prefixAmz)]), string(prefixAmz)) && n < len(names) {
			names[n] = append([]byte(nil), k...)
			n++
		}
	}
	for _, k := range names[:n] {
		h.DelBytes(k)
	}
}

// IsAnthropic reports a Claude model id (foundation model, inference
// profile or ARN).
func IsAnthropic(model string) bool {
	return strings.Contains(model, "anthropic.") || strings.Contains(model, "claude")
}

// escape is the model id as it goes in the path (see appendEscaped).
func escape(s string) string { return string(appendEscaped(nil, s)) }

// appendEscaped percent-encodes everything but RFC 3986 unreserved bytes,
// as the AWS SDKs encode a path label.
func appendEscaped(dst []byte, s string) []byte {
	const hexd = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', hexd[c>>4], hexd[c&15])
	}
	return dst
}
