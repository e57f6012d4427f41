package snapshot

import (
	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/adapters/headers"
	"gw/adapters/openai"
	"gw/adapters/registry"
	"gw/adapters/upstream"
	"gw/admin/resources"
)

// adapterConfig compiles pk into what the adapters tree reads: the family,
// the settings every family shares (body rules included), the openai family's
// provider and the
// upstream client settings. It is the one place a provider key crosses from
// admin into adapters; nothing below it sees resources types.
func adapterConfig(pk *resources.ProviderKey) *registry.Config {
	rq := &pk.Request
	c := &registry.Config{
		Family: pk.Adapter,
		Key: adapters.KeyConfig{
			Name:       pk.DisplayName,
			Credential: adapters.NewSecret(pk.APIKey.Reveal()),
			BaseURL:    pk.APIBase,
			Headers:    headers.Config{ForwardClientHeaders: rq.ForwardClientHeaders},
			Body: bodyrules.Config{
				TemperatureMin:      rq.TemperatureMin,
				TemperatureMax:      rq.TemperatureMax,
				ContentListToString: pk.Response.ContentListToString,
			},
		},
		OpenAI:           openai.Config{Provider: pk.Provider},
		TLS:              upstream.TLS{CACert: pk.TLS.CACert, CAPool: pk.TLS.CAPool, Verify: pk.TLS.Verify},
		ResolveAddresses: pk.ResolveAddresses,
	}
	c.Key.Responses.Base, c.Key.Responses.On = pk.Native(resources.SurfaceResponses)
	c.Key.Messages.Base, c.Key.Messages.On = pk.Native(resources.SurfaceMessages)
	for _, t := range rq.DefaultHeaders {
		ht := headers.Template{Name: t.Name, Parts: make([]headers.Part, len(t.Parts))}
		for i, p := range t.Parts {
			ht.Parts[i] = headers.Part{Literal: p.Literal, Var: p.Var}
		}
		c.Key.Headers.DefaultHeaders = append(c.Key.Headers.DefaultHeaders, ht)
	}
	for _, kv := range rq.ParamRenames {
		c.Key.Body.ParamRenames = append(c.Key.Body.ParamRenames, bodyrules.Rename{From: kv.Key, To: kv.Value})
	}
	for _, f := range rq.DefaultBodyFields {
		c.Key.Body.DefaultBodyFields = append(c.Key.Body.DefaultBodyFields, bodyrules.Field{Key: f.Key, Value: f.Value})
	}
	if pk.Adapter == registry.FamilyBedrock {
		// The spec ignores the key's tls block and resolve_addresses for
		// Bedrock (the deployment-level upstream settings apply);
		// unenforced.go lists them when set.
		c.TLS, c.ResolveAddresses = upstream.TLS{Verify: true}, nil
	}
	return c
}
