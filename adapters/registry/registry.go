// Package registry is the table of adapter families, keyed by the provider
// key's resolved `adapter` (resources.AdapterOpenAI ...). The snapshot
// compiler calls New once per provider key and BaseURL to pick the upstream
// client pool; nothing here runs per request.
package registry

import (
	"gw/adapters"
	"gw/adapters/anthropic"
	"gw/adapters/openai"
	"gw/admin/resources"
)

// Family is one adapter family.
type Family struct {
	New adapters.Factory
	// DefaultBaseURL is used when the key has no api_base; "" means
	// api_base is required.
	DefaultBaseURL string
}

// Families lists the implemented adapter families. bedrock and vertex are
// not implemented yet: New reports adapters.ErrUnsupported.
var Families = map[string]Family{
	resources.AdapterOpenAI:      {New: openai.New, DefaultBaseURL: openai.DefaultBaseURL},
	resources.AdapterAzureOpenAI: {New: openai.NewAzure},
	resources.AdapterAnthropic:   {New: anthropic.New, DefaultBaseURL: anthropic.DefaultBaseURL},
}

// New compiles the adapter of pk.
func New(pk *resources.ProviderKey, opts adapters.Options) (adapters.Adapter, error) {
	f, ok := Families[adapterOf(pk)]
	if !ok {
		return nil, adapters.ErrUnsupported
	}
	return f.New(pk, opts)
}

// BaseURL returns the base URL the adapter of pk calls: api_base, or the
// family's default. It reports adapters.ErrConfig when neither exists and
// adapters.ErrUnsupported for an unknown family.
func BaseURL(pk *resources.ProviderKey) (string, error) {
	if pk.APIBase != "" {
		return pk.APIBase, nil
	}
	f, ok := Families[adapterOf(pk)]
	if !ok {
		return "", adapters.ErrUnsupported
	}
	if f.DefaultBaseURL == "" {
		return "", adapters.ErrConfig
	}
	return f.DefaultBaseURL, nil
}

func adapterOf(pk *resources.ProviderKey) string {
	if pk.Adapter == "" {
		return resources.AdapterOpenAI
	}
	return pk.Adapter
}

// Built reports whether the adapter family of pk is in this build.
func Built(pk *resources.ProviderKey) bool {
	_, ok := Families[adapterOf(pk)]
	return ok
}
