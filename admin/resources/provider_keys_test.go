package resources

import (
	"strings"
	"testing"
)

func pkFile(extra string) string {
	return `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${OPENAI_KEY}
` + extra
}

func TestProviderKeyErrors(t *testing.T) {
	f := func(extra, want string) {
		t.Helper()
		loadErr(t, pkFile(extra), want)
	}
	const at = "provider_keys[0] (display_name=oa): "
	f("    secret: ${OPENAI_KEY}\n", at+"api_key: set exactly one of api_key and secret")
	f("    adapter: grpc\n", at+`adapter: unknown value "grpc"; allowed: openai, anthropic, bedrock, vertex, azure-openai`)
	f("    api_base: ftp://x\n", at+"api_base: must be an absolute http or https URL")
	f("    api_base: /relative\n", at+"api_base: must be an absolute http or https URL")
	f("    adapter: bedrock\n    apis: {responses: {}}\n", at+"apis: not accepted for adapter bedrock")
	f("    apis: {realtime: {}}\n", at+"apis.realtime: unknown field")
	f("    apis: {responses: {base: nope}}\n", at+"apis.responses.base: must be an absolute http or https URL")
	f("    tls: {ca_cert: not-a-pem}\n", at+"tls.ca_cert: holds no valid PEM certificate")
	f("    tls: {verify: \"no\"}\n", at+"tls.verify: must be a boolean, got a string")
	f("    api_base: https://x\n    resolve_addresses: [\"10.0.0.1:443\"]\n", at+"resolve_addresses[0]: must be an IPv4 or IPv6 literal")
	f("    api_base: https://x\n    resolve_addresses: [\"[::1]\"]\n", at+"resolve_addresses[0]: must be an IPv4 or IPv6 literal")
	f("    resolve_addresses: [10.0.0.1]\n", at+"resolve_addresses: requires api_base")
	f("    telemetry_tags: {kind: paid}\n", at+`telemetry_tags.kind: unknown value "paid"`)
	f("    request: {param_constraints: {temperature_min: 1.5, temperature_max: 0.5}}\n", at+"request.param_constraints.temperature_min: must not exceed temperature_max")
	f("    request: {param_constraints: {temperature_min: \"0.1\"}}\n", at+"request.param_constraints.temperature_min: must be a number, got a string")
	f("    request: {default_headers: {x-a: \"$${request.api_key.secret}\"}}\n", at+`request.default_headers.x-a: unknown request variable "request.api_key.secret"`)
	f("    request: {default_headers: {x-a: \"${request.model}\"}}\n", at+`request.default_headers.x-a: "${request.model}" is a per-request variable; write it as $${request.model}`)
	f("    request: {default_headers: {\"bad header\": x}}\n", at+"request.default_headers.bad header: invalid header name")
	f("    request: {forward_client_headers: [\"x-*-*\"]}\n", at+"request.forward_client_headers[0]: at most one '*' wildcard")
	f("    request: {forward_client_headers: [content-type]}\n", at+`request.forward_client_headers[0]: header "content-type" is never relayed`)
	f("    request: {forward_client_headers: [x-stainless-lang]}\n", at+`request.forward_client_headers[0]: header "x-stainless-lang" is never relayed`)
	f("    request: {forward_client_headers: [x-a, Sec-WebSocket-Protocol]}\n", at+`request.forward_client_headers[1]: header "sec-websocket-protocol" is a WebSocket handshake slot`)
	f("    request: {forward_client_headers: [sec-websocket-*]}\n", at+`request.forward_client_headers[0]: header "sec-websocket-*" is a WebSocket handshake slot`)
	f("    response: {stream_done_marker: maybe}\n", at+`response.stream_done_marker: unknown value "maybe"; allowed: required, optional, none`)
	f("    response: {content_list_to_string: 1}\n", at+"response.content_list_to_string: must be a boolean, got an integer")
	f("    request: {default_body_fields: {a: {<<: {b: 1}}}}\n", at+"request.default_body_fields.a.<<: unknown field")
	loadErr(t, `_format_version: "1"
provider_keys:
  - display_name: oa
`, "provider_keys[0] (display_name=oa): api_key: required")
}

func TestProviderKeyFields(t *testing.T) {
	r := mustLoad(t, pkFile(`    provider: anthropic
    api_base: https://user:pa55@${HOST}/v1
    apis:
      messages:
      responses: {base: "https://other.example.com/v1"}
    strip_headers: [" Authorization ", cookie, COOKIE]
    tls: {verify: false}
    resolve_addresses: [10.0.0.7, "2001:db8::1"]
    telemetry_tags: {kind: byo, featured: true, byo_label: lab}
    request:
      param_renames: {max_tokens: max_output_tokens}
      param_constraints: {temperature_min: 0, temperature_max: 1}
      default_headers:
        x-team: "$${request.api_key.team_id}"
        x-static: fixed
        host: evil
      forward_client_headers: [X-Trace-*, traceparent]
      default_body_fields: {metadata: {source: gw, n: 1}, seed: 7}
    response: {stream_done_marker: none, content_list_to_string: true, reasoning_field: reasoning_content}
  - display_name: lit
    secret: sk-literal
`))
	pk := r.ProviderKeys[0]
	if pk.Adapter != AdapterAnthropic {
		t.Fatalf("adapter derived from provider: %q", pk.Adapter)
	}
	if pk.APIBase != "https://user:pa55@api.example.com/v1" {
		t.Fatalf("api_base = %q", pk.APIBase)
	}
	if pk.APIs == nil || pk.APIs.Messages == nil || pk.APIs.Responses == nil || pk.APIs.Responses.Base != "https://other.example.com/v1" {
		t.Fatalf("apis = %+v", pk.APIs)
	}
	if strings.Join(pk.StripHeaders, ",") != "authorization,cookie" {
		t.Fatalf("strip_headers = %v", pk.StripHeaders)
	}
	if pk.TLS.Verify || len(pk.ResolveAddresses) != 2 {
		t.Fatalf("tls/resolve: %+v %v", pk.TLS, pk.ResolveAddresses)
	}
	if len(pk.Request.DefaultHeaders) != 2 || pk.Request.DefaultHeaders[0].Parts[0].Var != VarAPIKeyTeamID || !pk.Request.DefaultHeaders[1].IsStatic() {
		t.Fatalf("default_headers = %+v (host must be dropped)", pk.Request.DefaultHeaders)
	}
	if strings.Join(pk.Request.ForwardClientHeaders, ",") != "x-trace-*,traceparent" {
		t.Fatalf("forward = %v", pk.Request.ForwardClientHeaders)
	}
	if len(pk.Request.DefaultBodyFields) != 2 || string(pk.Request.DefaultBodyFields[0].Value) != `{"source":"gw","n":1}` {
		t.Fatalf("default_body_fields = %s", pk.Request.DefaultBodyFields[0].Value)
	}
	if pk.Response.StreamDoneMarker != "none" || !pk.Response.ContentListToString {
		t.Fatalf("response = %+v", pk.Response)
	}
	if r.ProviderKeys[1].APIKey.Reveal() != "sk-literal" {
		t.Fatal("secret spelling not read")
	}
	// Defaults.
	r = mustLoad(t, pkFile(""))
	pk = r.ProviderKeys[0]
	if pk.Adapter != AdapterOpenAI || !pk.TLS.Verify || strings.Join(pk.StripHeaders, ",") != "authorization,cookie,set-cookie,x-api-key" {
		t.Fatalf("defaults: %+v", pk)
	}
	// Explicit [] disables strip_headers.
	r = mustLoad(t, pkFile("    strip_headers: []\n"))
	if len(r.ProviderKeys[0].StripHeaders) != 0 {
		t.Fatal("explicit [] not honoured")
	}
}

func TestProviderKeyWarnings(t *testing.T) {
	res := Load([]byte(pkFile("  - display_name: lit\n    api_key: sk-literal-123\n    request: {default_headers: {x-gw-a: b}}\n")), envOf(testEnv))
	if res.Err() != nil {
		t.Fatal(res.Err())
	}
	var all []string
	for _, w := range res.Warnings {
		all = append(all, w.String())
	}
	joined := strings.Join(all, "\n")
	if !strings.Contains(joined, "provider_keys[1] (display_name=lit): api_key: credential written literally") {
		t.Fatalf("no literal-credential warning:\n%s", joined)
	}
	if strings.Contains(joined, "sk-literal-123") {
		t.Fatalf("warning leaks the credential")
	}
	if !strings.Contains(joined, "request.default_headers.x-gw-a: header is always dropped") {
		t.Fatalf("no dropped-header warning:\n%s", joined)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := NewSecret("sk-123")
	for _, got := range []string{s.String(), s.GoString()} {
		if strings.Contains(got, "sk-123") {
			t.Fatal("secret printed")
		}
	}
	b, _ := s.MarshalJSON()
	if strings.Contains(string(b), "sk-123") {
		t.Fatal("secret marshalled")
	}
}
