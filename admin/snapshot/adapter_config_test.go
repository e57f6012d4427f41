package snapshot

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/adapters/headers"
	"gw/adapters/native"
	"gw/adapters/openai"
	"gw/adapters/registry"
	"gw/adapters/upstream"
	"gw/admin/resources"
)

// TestFamilyNames: adapterConfig passes the loader's resolved `adapter`
// through as the registry's family name.
func TestFamilyNames(t *testing.T) {
	for res, reg := range map[string]string{
		resources.AdapterOpenAI:      registry.FamilyOpenAI,
		resources.AdapterAzureOpenAI: registry.FamilyAzureOpenAI,
		resources.AdapterAnthropic:   registry.FamilyAnthropic,
		resources.AdapterBedrock:     registry.FamilyBedrock,
		resources.AdapterVertex:      registry.FamilyVertex,
	} {
		if res != reg {
			t.Fatalf("resources %q; registry %q", res, reg)
		}
	}
	for fam := range registry.Families {
		switch fam {
		case resources.AdapterOpenAI, resources.AdapterAzureOpenAI, resources.AdapterAnthropic, resources.AdapterBedrock, resources.AdapterVertex:
		default:
			t.Fatalf("registry family %q is not an adapter the loader accepts", fam)
		}
	}
}

// TestAdapterConfig: every provider key field the adapters read reaches
// the config, as written.
func TestAdapterConfig(t *testing.T) {
	r := resources.Load([]byte(`_format_version: "1"
provider_keys:
  - display_name: local
    provider: vllm
    api_key: ${KEY}
    api_base: ${BASE}/v1
    request:
      default_headers:
        x-team: "$${request.api_key.team_id}"
      forward_client_headers: ["x-trace-*", "x-gw-*"]
  - display_name: full
    provider: openai
    api_key: ${KEY}
    api_base: https://llm.example/v1/
    apis:
      messages: {base: "https://llm.example/anthropic/v1"}
    tls: {verify: false}
    resolve_addresses: ["10.0.0.7", "::1"]
    request:
      param_renames: {user: end_user, max_completion_tokens: max_tokens}
      param_constraints: {temperature_min: 0.2, temperature_max: 1.5}
      default_headers:
        OpenAI-Project: proj_1
        x-who: "u-$${request.api_key.user_id}-m"
      forward_client_headers: ["X-Request-Id"]
      default_body_fields:
        service_tier: default
        metadata: {a: 1}
    response:
      content_list_to_string: true
  - display_name: claude
    provider: anthropic
    secret: ${KEY}
`), func(n string) (string, bool) {
		return map[string]string{"KEY": "sk-local", "BASE": "http://127.0.0.1:9"}[n], true
	})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	lo, hi := 0.2, 1.5
	want := []*registry.Config{{
		Family: registry.FamilyOpenAI,
		Key: adapters.KeyConfig{
			Name: "local", Credential: adapters.NewSecret("sk-local"), BaseURL: "http://127.0.0.1:9/v1",
			Headers: headers.Config{
				DefaultHeaders:       []headers.Template{{Name: "x-team", Parts: []headers.Part{{Var: headers.VarAPIKeyTeamID}}}},
				ForwardClientHeaders: []string{"x-trace-*", "x-gw-*"},
			},
		},
		OpenAI: openai.Config{Provider: "vllm"},
		TLS:    upstream.TLS{Verify: true},
	}, {
		Family: registry.FamilyOpenAI,
		Key: adapters.KeyConfig{
			Name: "full", Credential: adapters.NewSecret("sk-local"), BaseURL: "https://llm.example/v1/",
			Headers: headers.Config{
				DefaultHeaders: []headers.Template{
					{Name: "openai-project", Parts: []headers.Part{{Literal: "proj_1"}}},
					{Name: "x-who", Parts: []headers.Part{{Literal: "u-"}, {Var: headers.VarAPIKeyUserID}, {Literal: "-m"}}},
				},
				ForwardClientHeaders: []string{"x-request-id"},
			},
			Messages: adapters.NativeSurface{On: true, Base: "https://llm.example/anthropic/v1"},
			Body: bodyrules.Config{
				ParamRenames:        []bodyrules.Rename{{From: "user", To: "end_user"}, {From: "max_completion_tokens", To: "max_tokens"}},
				TemperatureMin:      &lo,
				TemperatureMax:      &hi,
				DefaultBodyFields:   []bodyrules.Field{{Key: "service_tier", Value: []byte(`"default"`)}, {Key: "metadata", Value: []byte(`{"a":1}`)}},
				ContentListToString: true,
			},
		},
		OpenAI:           openai.Config{Provider: "openai"},
		TLS:              upstream.TLS{Verify: false},
		ResolveAddresses: []netip.Addr{netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("::1")},
	}, {
		Family: registry.FamilyAnthropic,
		Key: adapters.KeyConfig{
			Name: "claude", Credential: adapters.NewSecret("sk-local"),
			Messages: adapters.NativeSurface{On: true},
		},
		OpenAI: openai.Config{Provider: "anthropic"},
		TLS:    upstream.TLS{Verify: true},
	}}
	for i, pk := range r.Resources.ProviderKeys {
		got := adapterConfig(pk)
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", pk.DisplayName, *got, *want[i])
		}
		if got.Key.Credential.Reveal() != "sk-local" {
			t.Errorf("%s: credential not carried", pk.DisplayName)
		}
	}
}

// TestAdapterConfigNative: the `apis` rules (resources.ProviderKey.Native)
// decide the native surfaces the adapters compile.
func TestAdapterConfigNative(t *testing.T) {
	type want struct{ responses, messages string }
	cases := []struct {
		name string
		pk   resources.ProviderKey
		base string
		want want
	}{
		{"openai first-party derives responses", resources.ProviderKey{Provider: "openai", Adapter: resources.AdapterOpenAI}, "https://api.openai.com/v1",
			want{responses: "https://api.openai.com/v1"}},
		{"openai-compatible without provider is chat only", resources.ProviderKey{Adapter: resources.AdapterOpenAI}, "https://llm.internal/v1", want{}},
		{"apis present is authoritative", resources.ProviderKey{Provider: "openai", Adapter: resources.AdapterOpenAI, APIs: &resources.APIs{}}, "https://api.openai.com/v1", want{}},
		{"apis.messages with its own base", resources.ProviderKey{Adapter: resources.AdapterOpenAI,
			APIs: &resources.APIs{Messages: &resources.Surface{Base: "https://api.deepseek.com/anthropic/v1"}}}, "https://api.deepseek.com/v1",
			want{messages: "https://api.deepseek.com/anthropic/v1"}},
		{"anthropic always serves messages", resources.ProviderKey{Adapter: resources.AdapterAnthropic, APIs: &resources.APIs{}}, "https://api.anthropic.com/v1",
			want{messages: "https://api.anthropic.com/v1"}},
		{"anthropic plus apis.responses", resources.ProviderKey{Adapter: resources.AdapterAnthropic, APIs: &resources.APIs{Responses: &resources.Surface{}}}, "https://gw.example/v1",
			want{responses: "https://gw.example/v1", messages: "https://gw.example/v1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := adapterConfig(&c.pk)
			e, err := native.Compile(&cfg.Key, c.base, native.AuthBearer)
			if err != nil {
				t.Fatal(err)
			}
			got := want{e.Base(adapters.SurfaceResponses), e.Base(adapters.SurfaceMessages)}
			if got != c.want || e.Base(adapters.SurfaceCountTokens) != c.want.messages || e.Base(adapters.SurfaceChat) != "" {
				t.Fatalf("bases %+v (count_tokens %q); want %+v", got, e.Base(adapters.SurfaceCountTokens), c.want)
			}
		})
	}
}

// TestExampleFile compiles every provider key of examples/gw.yaml.
func TestExampleFile(t *testing.T) {
	env := map[string]string{}
	for k, v := range exampleEnv {
		env[k] = v
	}
	for _, n := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} {
		env[n] = "x-" + n + "-" + strings.Repeat("k", 40)
	}
	res := loadFile(t, "../../examples/gw.yaml", env)
	pool := upstream.NewPool(upstream.Options{})
	for _, pk := range res.ProviderKeys {
		cfg := adapterConfig(pk)
		a, err := registry.New(cfg, adapters.Options{})
		if _, ok := registry.Families[pk.Adapter]; !ok {
			if !errors.Is(err, adapters.ErrUnsupported) {
				t.Fatalf("%s (%s): got %v; want ErrUnsupported", pk.DisplayName, pk.Adapter, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", pk.DisplayName, err)
		}
		base, err := registry.BaseURL(cfg)
		if err != nil {
			t.Fatalf("%s: %v", pk.DisplayName, err)
		}
		if _, err := pool.Client(cfg.Target(base)); err != nil {
			t.Fatalf("%s: %v", pk.DisplayName, err)
		}
		for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%#v", a), fmt.Sprintf("%+v", cfg)} {
			if strings.Contains(s, "kkkk") {
				t.Fatalf("%s: the credential is printed: %s", pk.DisplayName, s)
			}
		}
	}
}
