// Package registry is the table of adapter families, keyed by the provider
// key's resolved `adapter` (FamilyOpenAI ...). The snapshot compiler fills a
// Config per provider key and calls New once per key and BaseURL to pick
// the upstream client pool; nothing here runs per request.
package registry

import (
	"net/netip"

	"gw/adapters"
	"gw/adapters/anthropic"
	"gw/adapters/bedrock"
	"gw/adapters/openai"
	"gw/adapters/upstream"
	"gw/adapters/vertex"
)

// Adapter families: the values of a provider key's resolved `adapter`.
const (
	FamilyOpenAI      = "openai"
	FamilyAnthropic   = "anthropic"
	FamilyBedrock     = "bedrock"
	FamilyVertex      = "vertex"
	FamilyAzureOpenAI = "azure-openai"
)

// Config is one provider key as the adapters tree reads it: the family, what
// every family reads (Key), the family-specific parts, and the upstream
// client settings. The snapshot compiler fills it; it must not change once
// passed to New.
type Config struct {
	// Family is the resolved `adapter`; "" means FamilyOpenAI.
	Family string
	Key    adapters.KeyConfig
	// OpenAI is read by the openai and azure-openai families.
	OpenAI openai.Config
	// TLS and ResolveAddresses are the upstream client settings of the
	// key's base URL (see Target).
	TLS upstream.TLS
	// ResolveAddresses replace DNS for the api_base host, tried in order.
	ResolveAddresses []netip.Addr
}

// Target returns the upstream client target of c for base (BaseURL's
// answer, or a native surface's base).
func (c *Config) Target(base string) upstream.Target {
	return upstream.Target{BaseURL: base, TLS: c.TLS, ResolveAddresses: c.ResolveAddresses}
}

// Factory compiles the adapter of one provider key.
type Factory func(c *Config, opts adapters.Options) (adapters.Adapter, error)

// Family is one adapter family.
type Family struct {
	New Factory
	// DefaultBaseURL is used when the key has no api_base; "" means
	// api_base is required (unless BaseURLOf is set).
	DefaultBaseURL string
	// BaseURLOf, when set, computes the default base URL from the key
	// (regional endpoints) in place of DefaultBaseURL.
	BaseURLOf func(c *Config) (string, error)
}

// Families lists the implemented adapter families; New reports
// adapters.ErrUnsupported for any other.
var Families = map[string]Family{
	FamilyOpenAI:      {New: newOpenAI, DefaultBaseURL: openai.DefaultBaseURL},
	FamilyAzureOpenAI: {New: newAzureOpenAI},
	FamilyAnthropic:   {New: newAnthropic, DefaultBaseURL: anthropic.DefaultBaseURL},
	FamilyBedrock:     {New: newBedrock, BaseURLOf: bedrockBaseURL},
	FamilyVertex:      {New: newVertex, BaseURLOf: vertexBaseURL},
}

func newVertex(c *Config, opts adapters.Options) (adapters.Adapter, error) {
	return vertex.New(&c.Key, &c.OpenAI, opts)
}

func vertexBaseURL(c *Config) (string, error) {
	return vertex.DocumentBaseURL(c.Key.BaseURL, c.Key.Credential.Reveal())
}

func newBedrock(c *Config, opts adapters.Options) (adapters.Adapter, error) {
	return bedrock.New(&c.Key, opts)
}

// bedrockBaseURL is the regional runtime endpoint of the key's region.
func bedrockBaseURL(c *Config) (string, error) {
	_, region, err := bedrock.Credentials(c.Key.Credential, nil)
	if err != nil {
		return "", err
	}
	return bedrock.DefaultBaseURL(region), nil
}

func newOpenAI(c *Config, opts adapters.Options) (adapters.Adapter, error) {
	return openai.New(&c.Key, &c.OpenAI, opts)
}

func newAzureOpenAI(c *Config, opts adapters.Options) (adapters.Adapter, error) {
	return openai.NewAzure(&c.Key, &c.OpenAI, opts)
}

func newAnthropic(c *Config, opts adapters.Options) (adapters.Adapter, error) {
	return anthropic.New(&c.Key, opts)
}

// New compiles the adapter of c.
func New(c *Config, opts adapters.Options) (adapters.Adapter, error) {
	f, ok := Families[familyOf(c.Family)]
	if !ok {
		return nil, adapters.ErrUnsupported
	}
	return f.New(c, opts)
}

// BaseURL returns the base URL the adapter of c calls: api_base, or the
// family's default. It reports adapters.ErrConfig when neither exists and
// adapters.ErrUnsupported for an unknown family.
func BaseURL(c *Config) (string, error) {
	if c.Key.BaseURL != "" {
		return c.Key.BaseURL, nil
	}
	f, ok := Families[familyOf(c.Family)]
	if !ok {
		return "", adapters.ErrUnsupported
	}
	if f.BaseURLOf != nil {
		return f.BaseURLOf(c)
	}
	if f.DefaultBaseURL == "" {
		return "", adapters.ErrConfig
	}
	return f.DefaultBaseURL, nil
}

func familyOf(family string) string {
	if family == "" {
		return FamilyOpenAI
	}
	return family
}

// Built reports whether the adapter family (a provider key's resolved
// `adapter`; "" means FamilyOpenAI) is in this build.
func Built(family string) bool {
	_, ok := Families[familyOf(family)]
	return ok
}
