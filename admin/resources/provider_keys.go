package resources

import (
	"crypto/x509"
	"encoding/json"
	"net/netip"
	"net/url"
	"strings"

	"gw/adapters/headers"
)

// Adapter protocol families.
const (
	AdapterOpenAI      = "openai"
	AdapterAnthropic   = "anthropic"
	AdapterBedrock     = "bedrock"
	AdapterVertex      = "vertex"
	AdapterAzureOpenAI = "azure-openai"
)

// ProviderKey is one provider_keys entry.
type ProviderKey struct {
	Index       int
	ID          string
	DisplayName string
	APIKey      Secret // from `api_key` or its alternative spelling `secret`
	Provider    string
	// Adapter is the resolved protocol family: the explicit `adapter`, or
	// derived from `provider` (see docs/CONFIG.md), default openai.
	Adapter      string
	APIBase      string
	APIs         *APIs // nil when `apis` is absent
	StripHeaders []string
	TLS          TLSSettings
	// ResolveAddresses replace DNS for the api_base host, tried in order.
	ResolveAddresses []netip.Addr
	TelemetryTags    TelemetryTags
	Request          RequestSettings
	Response         ResponseSettings
}

// APIs lists the surfaces an endpoint serves natively.
type APIs struct {
	Responses *Surface
	Messages  *Surface
}

// Surface is one native surface; Base overrides api_base for it.
type Surface struct {
	Base string
}

// Native surface names, as written under `apis`.
const (
	SurfaceResponses = "responses"
	SurfaceMessages  = "messages"
)

// Native reports whether the key's endpoint serves surface natively (the
// caller's body goes upstream in its own wire format) and the base URL
// override for it ("" means the key's own base URL).
//
// The rules (docs/CONFIG.md, "Native surfaces"): with `apis` present, a
// surface is native exactly when it is listed — except that adapter
// anthropic always serves messages. Without `apis`, the surfaces follow
// from provider and adapter: adapter anthropic serves messages; provider
// openai on the openai adapter (OpenAI's own API) serves responses;
// everything else is chat completions only.
func (pk *ProviderKey) Native(surface string) (base string, ok bool) {
	var s *Surface
	if pk.APIs != nil {
		switch surface {
		case SurfaceResponses:
			s = pk.APIs.Responses
		case SurfaceMessages:
			s = pk.APIs.Messages
		}
	}
	if s != nil {
		return s.Base, true
	}
	switch surface {
	case SurfaceMessages:
		return "", pk.Adapter == AdapterAnthropic
	case SurfaceResponses:
		return "", pk.APIs == nil && pk.Adapter == AdapterOpenAI && strings.EqualFold(pk.Provider, "openai")
	}
	return "", false
}

// TLSSettings is a provider key's `tls` block.
type TLSSettings struct {
	CACert string         // PEM as written
	CAPool *x509.CertPool // system roots plus CACert; nil when CACert is empty
	Verify bool           // default true
}

// TelemetryTags is a provider key's `telemetry_tags` block.
type TelemetryTags struct {
	Kind            string
	Featured        bool
	BrandedProvider string
	PKLabel         string
	BYOLabel        string
}

// RequestSettings is a provider key's `request` block.
type RequestSettings struct {
	ParamRenames         []KV
	TemperatureMin       *float64
	TemperatureMax       *float64
	DefaultHeaders       []HeaderTemplate
	ForwardClientHeaders []string // lowercase; exact names or one '*'
	DefaultBodyFields    []JSONField
}

// JSONField is one top-level body field with its value as JSON.
type JSONField struct {
	Key   string
	Value json.RawMessage
}

// ResponseSettings is a provider key's `response` block.
type ResponseSettings struct {
	StreamDoneMarker    string // "", required, optional, none
	ContentListToString bool
	ReasoningField      string
	ErrorEnvelope       string
}

// DefaultStripHeaders is strip_headers when the field is absent.
var DefaultStripHeaders = []string{"authorization", "cookie", "set-cookie", "x-api-key"}

// adapterForProvider derives the protocol family of a key without `adapter`.
func adapterForProvider(provider string) string {
	switch strings.ToLower(provider) {
	case "anthropic":
		return AdapterAnthropic
	case "bedrock", "aws-bedrock", "aws_bedrock":
		return AdapterBedrock
	case "vertex", "vertex_ai", "vertex-ai", "gemini", "google":
		return AdapterVertex
	case "azure", "azure-openai", "azure_openai":
		return AdapterAzureOpenAI
	}
	return AdapterOpenAI
}

func (l *loader) decodeProviderKey(e *entry, o *obj) {
	pk := &ProviderKey{Index: e.idx}
	pk.DisplayName = o.reqStr("display_name")
	e.setID("display_name", pk.DisplayName)
	pk.ID = DeriveID(KindProviderKey, pk.DisplayName)

	hasKey, hasSecret := o.has("api_key"), o.has("secret")
	switch {
	case hasKey && hasSecret:
		o.raw("api_key")
		o.raw("secret")
		o.errf("api_key", "set exactly one of api_key and secret, not both")
	case !hasKey && !hasSecret:
		o.raw("api_key")
		o.raw("secret")
		o.errf("api_key", "required (or its alternative spelling secret); supply it as ${VAR}")
	default:
		field := "api_key"
		if hasSecret {
			field = "secret"
		}
		s, refs, ok := o.strRefs(field)
		if ok {
			if s == "" {
				o.errf(field, "must not be empty")
			}
			if refs == 0 {
				o.warnf(field, "credential written literally; supply it as ${VAR} so it stays out of the file")
			}
			pk.APIKey = NewSecret(s)
		}
	}

	pk.Provider, _ = o.str("provider")
	if a, ok := o.enum("adapter", AdapterOpenAI, AdapterAnthropic, AdapterBedrock, AdapterVertex, AdapterAzureOpenAI); ok {
		pk.Adapter = a
	} else {
		pk.Adapter = adapterForProvider(pk.Provider)
	}
	if s, ok := o.str("api_base"); ok {
		if msg := checkBaseURL(s); msg != "" {
			o.errf("api_base", msg)
		}
		pk.APIBase = s
	}
	if apis := o.sub("apis"); apis != nil {
		switch pk.Adapter {
		case AdapterBedrock, AdapterVertex, AdapterAzureOpenAI:
			o.errf("apis", "not accepted for adapter "+pk.Adapter)
		}
		pk.APIs = &APIs{Responses: decodeSurface(apis, "responses"), Messages: decodeSurface(apis, "messages")}
		apis.finish()
	}
	if hs, ok := o.strList("strip_headers"); ok {
		pk.StripHeaders = normaliseHeaderList(hs)
	} else if !o.has("strip_headers") {
		pk.StripHeaders = DefaultStripHeaders
	}
	pk.TLS.Verify = true
	if t := o.sub("tls"); t != nil {
		if pem, ok := t.str("ca_cert"); ok {
			pool, err := x509.SystemCertPool()
			if err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM([]byte(pem)) {
				t.errf("ca_cert", "holds no valid PEM certificate")
			}
			pk.TLS.CACert, pk.TLS.CAPool = pem, pool
		}
		pk.TLS.Verify = t.boolDefault("verify", true)
		t.finish()
	}
	if addrs, ok := o.strList("resolve_addresses"); ok {
		for i, a := range addrs {
			ip, err := netip.ParseAddr(a)
			if err != nil || ip.Zone() != "" {
				o.d.errAt(e, indexPath("resolve_addresses", i), "must be an IPv4 or IPv6 literal without port or brackets")
				continue
			}
			pk.ResolveAddresses = append(pk.ResolveAddresses, ip)
		}
		if len(pk.ResolveAddresses) > 0 && pk.APIBase == "" {
			o.errf("resolve_addresses", "requires api_base (the addresses replace DNS for its host)")
		}
	}
	if t := o.sub("telemetry_tags"); t != nil {
		pk.TelemetryTags.Kind, _ = t.enum("kind", "catalog", "byo")
		pk.TelemetryTags.Featured = t.boolDefault("featured", false)
		pk.TelemetryTags.BrandedProvider, _ = t.str("branded_provider")
		pk.TelemetryTags.PKLabel, _ = t.str("pk_label")
		pk.TelemetryTags.BYOLabel, _ = t.str("byo_label")
		t.finish()
	}
	if r := o.sub("request"); r != nil {
		l.decodeRequestSettings(r, &pk.Request)
		r.finish()
	}
	if r := o.sub("response"); r != nil {
		pk.Response.StreamDoneMarker, _ = r.enum("stream_done_marker", "required", "optional", "none")
		pk.Response.ContentListToString = r.boolDefault("content_list_to_string", false)
		pk.Response.ReasoningField, _ = r.str("reasoning_field")
		pk.Response.ErrorEnvelope, _ = r.str("error_envelope")
		r.finish()
	}
	l.res.ProviderKeys = append(l.res.ProviderKeys, pk)
}

func decodeSurface(apis *obj, name string) *Surface {
	if !apis.present(name) {
		return nil
	}
	s := &Surface{}
	if !apis.has(name) {
		apis.raw(name) // `responses:` with no value still declares the surface native
		return s
	}
	so := apis.sub(name)
	if so == nil {
		return s
	}
	if b, ok := so.str("base"); ok {
		if msg := checkBaseURL(b); msg != "" {
			so.errf("base", msg)
		}
		s.Base = b
	}
	so.finish()
	return s
}

// checkBaseURL validates an absolute http(s) URL; user-info is accepted as written.
// The message never echoes the URL (it may carry credentials in user-info).
func checkBaseURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "must be an absolute http or https URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "must be an absolute http or https URL (scheme http or https)"
	}
	if u.Host == "" || u.Hostname() == "" {
		return "must be an absolute http or https URL with a host"
	}
	if u.Fragment != "" {
		return "must not have a fragment"
	}
	return ""
}

func normaliseHeaderList(hs []string) []string {
	out := make([]string, 0, len(hs))
	seen := map[string]bool{}
	for _, h := range hs {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, h)
	}
	return out
}

func (l *loader) decodeRequestSettings(r *obj, rs *RequestSettings) {
	if kvs, ok := r.strMap("param_renames"); ok {
		for _, kv := range kvs {
			if kv.Value == "" {
				r.d.errAt(r.e, joinPath(r.fieldPath("param_renames"), kv.Key), "must not be empty")
			}
		}
		rs.ParamRenames = kvs
	}
	if pc := r.sub("param_constraints"); pc != nil {
		rs.TemperatureMin = pc.optFloat("temperature_min")
		rs.TemperatureMax = pc.optFloat("temperature_max")
		if rs.TemperatureMin != nil && rs.TemperatureMax != nil && *rs.TemperatureMin > *rs.TemperatureMax {
			pc.errf("temperature_min", "must not exceed temperature_max")
		}
		pc.finish()
	}
	if kvs, ok := r.strMap("default_headers"); ok {
		for _, kv := range kvs {
			path := joinPath(r.fieldPath("default_headers"), kv.Key)
			name := strings.ToLower(kv.Key)
			if !validHeaderName(name) {
				r.d.errAt(r.e, path, "invalid header name")
				continue
			}
			if alwaysDroppedHeader(name) {
				r.d.warnAt(r.e, path, "header is always dropped (host, hop-by-hop and x-gw-* headers are never sent upstream)")
				continue
			}
			t, msg := parseHeaderTemplate(kv.Value)
			if msg != "" {
				r.d.errAt(r.e, path, msg)
				continue
			}
			t.Name = name
			rs.DefaultHeaders = append(rs.DefaultHeaders, t)
		}
	}
	rs.ForwardClientHeaders, _ = r.decodeForwardHeaders("forward_client_headers")
	rejectHandshakeHeaders(r)
	if m := r.sub("default_body_fields"); m != nil {
		for i, k := range m.keys {
			m.used[i] = true
			if k.ShortTag() == "!!merge" {
				m.errf("<<", "unknown field (YAML merge keys are not expanded)")
				continue
			}
			v, ok := r.d.jsonValue(r.e, joinPath(m.path, k.Value), m.vals[i])
			if ok {
				rs.DefaultBodyFields = append(rs.DefaultBodyFields, JSONField{Key: k.Value, Value: v})
			}
		}
	}
}

func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// alwaysDroppedHeader: host, hop-by-hop and x-gw-* never go upstream from
// default_headers (the adapters' own list, headers.AlwaysDropped).
func alwaysDroppedHeader(h string) bool { return headers.AlwaysDropped(h) }

// NeverRelayedHeader reports names that forward_client_headers never relays
// (the adapters' own list, headers.NeverRelayed).
func NeverRelayedHeader(h string) bool { return headers.NeverRelayed(h) }

// decodeForwardHeaders reads a forward_client_headers list with the rules
// of provider keys: entries are trimmed and lowercased, hold at most one '*',
// must be header names, must not name a never-relayed header exactly, and are
// deduplicated. set reports that the field was written (even as []).
func (o *obj) decodeForwardHeaders(name string) (hs []string, set bool) {
	set = o.has(name)
	list, _ := o.strList(name)
	hs = make([]string, 0, len(list))
	for i, h := range list {
		h = strings.ToLower(strings.TrimSpace(h))
		path := indexPath(o.fieldPath(name), i)
		switch {
		case strings.Count(h, "*") > 1:
			o.d.errAt(o.e, path, "at most one '*' wildcard is allowed")
		case !validHeaderName(strings.Replace(h, "*", "x", 1)):
			o.d.errAt(o.e, path, "invalid header name")
		case !strings.Contains(h, "*") && NeverRelayedHeader(h):
			o.d.errAt(o.e, path, "header \""+h+"\" is never relayed upstream; remove it")
		default:
			hs = append(hs, h)
		}
	}
	return normaliseHeaderList(hs), set
}

// handshakeHeaders are the WebSocket handshake's own slots: on /v1/realtime
// gw writes them for each leg, so forward_client_headers may not name them
// (spec: rejected even when named).
var handshakeHeaders = map[string]bool{
	"sec-websocket-key": true, "sec-websocket-version": true, "sec-websocket-protocol": true,
	"sec-websocket-extensions": true, "sec-websocket-accept": true,
}

// rejectHandshakeHeaders reports forward_client_headers entries naming a
// handshake slot exactly or by a sec-websocket-* pattern.
func rejectHandshakeHeaders(r *obj) {
	list, _ := r.strList("forward_client_headers")
	for i, h := range list {
		h = strings.ToLower(strings.TrimSpace(h))
		if handshakeHeaders[h] || (strings.Contains(h, "*") && strings.HasPrefix(h, "sec-websocket-")) {
			r.d.errAt(r.e, indexPath(r.fieldPath("forward_client_headers"), i),
				"header \""+h+"\" is a WebSocket handshake slot gw sets itself on /v1/realtime; remove it")
		}
	}
}
