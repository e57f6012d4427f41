package api

import "gw/admin/gateway"

// collection describes one admin collection: its key segment, the kind named
// in messages, its schema and the methods it answers (APISIX's per-resource
// unsupported_methods; others get 405).
type collection struct {
	name   string // key segment: routes
	kind   string // in messages: route
	schema string // schemas/<schema>.json
	// methods allowed on the item path; the collection path allows GET
	// (list), PUT (id in the body) and POST when "POST" is listed.
	methods map[string]bool
	// refs names the ID fields that must resolve, with their collection.
	refs []ref
	// idField is the body field holding the ID ("username" for consumers).
	idField string
}

type ref struct {
	field, coll, kind string
}

func methods(m ...string) map[string]bool {
	out := map[string]bool{}
	for _, x := range m {
		out[x] = true
	}
	return out
}

var upstreamRef = ref{"upstream_id", gateway.Upstreams, "upstream"}
var serviceRef = ref{"service_id", gateway.Services, "service"}
var pluginConfigRef = ref{"plugin_config_id", gateway.PluginConfigs, "plugin config"}

var collections = map[string]*collection{
	gateway.Routes: {name: gateway.Routes, kind: "route", schema: "route", methods: methods("GET", "PUT", "POST", "PATCH", "DELETE"),
		refs: []ref{upstreamRef, serviceRef, pluginConfigRef}},
	gateway.Services: {name: gateway.Services, kind: "service", schema: "service", methods: methods("GET", "PUT", "POST", "PATCH", "DELETE"),
		refs: []ref{upstreamRef}},
	gateway.Upstreams:      {name: gateway.Upstreams, kind: "upstream", schema: "upstream", methods: methods("GET", "PUT", "POST", "PATCH", "DELETE")},
	gateway.Consumers:      {name: gateway.Consumers, kind: "consumer", schema: "consumer", methods: methods("GET", "PUT", "DELETE"), idField: "username"},
	gateway.Credentials:    {name: gateway.Credentials, kind: "credential", schema: "credential", methods: methods("GET", "PUT", "DELETE")},
	gateway.PluginConfigs:  {name: gateway.PluginConfigs, kind: "plugin config", schema: "plugin_config", methods: methods("GET", "PUT", "PATCH", "DELETE")},
	gateway.GlobalRules:    {name: gateway.GlobalRules, kind: "global rule", schema: "global_rule", methods: methods("GET", "PUT", "PATCH", "DELETE")},
	gateway.PluginMetadata: {name: gateway.PluginMetadata, kind: "plugin metadata", methods: methods("GET", "PUT", "DELETE")},
	gateway.StreamRoutes: {name: gateway.StreamRoutes, kind: "stream route", schema: "stream_route", methods: methods("GET", "PUT", "POST", "DELETE"),
		refs: []ref{upstreamRef, serviceRef}},
	gateway.SSLs:    {name: gateway.SSLs, kind: "ssl", schema: "ssl", methods: methods("GET", "PUT", "POST", "PATCH", "DELETE")},
	gateway.Secrets: {name: gateway.Secrets, kind: "secret", methods: methods("GET", "PUT", "PATCH", "DELETE")},
}

// schemaAliases maps /schema/<resource> names to schema documents.
var schemaAliases = map[string]string{
	"route": "route", "routes": "route", "service": "service", "services": "service", "upstream": "upstream", "upstreams": "upstream",
	"consumer": "consumer", "consumers": "consumer", "credential": "credential", "credentials": "credential",
	"plugin_config": "plugin_config", "plugin_configs": "plugin_config", "global_rule": "global_rule", "global_rules": "global_rule",
	"stream_route": "stream_route", "stream_routes": "stream_route", "ssl": "ssl", "ssls": "ssl",
	"secrets/vault": "secrets/vault", "secrets/aws": "secrets/aws", "secrets/gcp": "secrets/gcp",
}

var secretTypes = map[string]bool{"vault": true, "aws": true, "gcp": true}
