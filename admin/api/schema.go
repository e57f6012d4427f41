package api

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The JSON Schemas (draft 2020-12) of every collection and plugin live in
// schemas/ and are compiled once; the same documents are served by
// /schema/<resource> and /schema/plugins/<name>.
//
//go:embed schemas
var schemaFS embed.FS

const schemaBase = "https://gw.local/schemas/"

// plugin is one built-in plugin's schemas.
type plugin struct {
	Name string
	// Docs are the served documents: schema, consumer_schema, metadata_schema.
	Docs     map[string]any
	Schema   *jsonschema.Schema
	Consumer *jsonschema.Schema // nil: the plugin has no credentials
	Metadata *jsonschema.Schema // nil: the plugin takes no metadata
	// check runs rules a JSON Schema cannot say (unique names in a list).
	check func(conf any) error
}

// Schemas is the compiled validation set.
type Schemas struct {
	coll    map[string]*jsonschema.Schema // by schema name: route, upstream, ...
	docs    map[string]any                // served collection documents
	plugins map[string]*plugin
	names   []string // sorted plugin names
}

// checks are the plugin rules beyond JSON Schema.
var checks = map[string]func(conf any) error{
	"ai-proxy-multi": uniqueInstanceNames,
}

// metaSchema is the `_meta` every plugin configuration may carry.
var metaSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"disable":        map[string]any{"type": "boolean"},
		"priority":       map[string]any{"type": "integer"},
		"filter":         map[string]any{"type": "array"},
		"error_response": map[string]any{"type": []any{"string", "object"}},
		"pre_function":   map[string]any{"type": "string", "minLength": 1},
	},
	"additionalProperties": false,
}

// schemaNames are the collections' schema documents (schemas/<name>.json).
var schemaNames = []string{"route", "service", "upstream", "consumer", "credential", "plugin_config", "global_rule", "stream_route", "ssl",
	"secrets/vault", "secrets/aws", "secrets/gcp"}

// LoadSchemas compiles the embedded schemas.
func LoadSchemas() (*Schemas, error) {
	s := &Schemas{coll: map[string]*jsonschema.Schema{}, docs: map[string]any{}, plugins: map[string]*plugin{}}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	add := func(url string, doc any) error {
		if err := c.AddResource(url, doc); err != nil {
			return fmt.Errorf("cannot add schema %s: %w", url, err)
		}
		return nil
	}
	// Plugins first: the collections' plugins.json documents list them.
	entries, err := fs.ReadDir(schemaFS, "schemas/plugins")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json")
		doc, err := readDoc("schemas/plugins/" + e.Name())
		if err != nil {
			return nil, err
		}
		p := &plugin{Name: name, Docs: map[string]any{}, check: checks[name]}
		defs := doc["$defs"]
		for _, part := range []string{"schema", "consumer_schema", "metadata_schema"} {
			d, ok := doc[part].(map[string]any)
			if !ok {
				continue
			}
			if defs != nil {
				d["$defs"] = defs
			}
			if part == "schema" {
				props, _ := d["properties"].(map[string]any)
				if props == nil {
					props = map[string]any{}
					d["properties"] = props
				}
				props["_meta"] = metaSchema
			}
			p.Docs[part] = d
			if err := add(schemaBase+"plugins/"+name+"/"+part+".json", d); err != nil {
				return nil, err
			}
		}
		if p.Docs["schema"] == nil {
			return nil, fmt.Errorf("plugin %s: no schema", name)
		}
		s.plugins[name] = p
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	ref := func(name, part string) map[string]any {
		return map[string]any{"$ref": schemaBase + "plugins/" + name + "/" + part + ".json"}
	}
	routePlugins, consumerPlugins, credPlugins := map[string]any{}, map[string]any{}, map[string]any{}
	for _, name := range s.names {
		p := s.plugins[name]
		routePlugins[name] = ref(name, "schema")
		if p.Docs["consumer_schema"] != nil {
			consumerPlugins[name] = ref(name, "consumer_schema")
			credPlugins[name] = ref(name, "consumer_schema")
		} else {
			consumerPlugins[name] = ref(name, "schema")
		}
	}
	for url, props := range map[string]map[string]any{"plugins.json": routePlugins, "consumer_plugins.json": consumerPlugins, "credential_plugins.json": credPlugins} {
		doc := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if url == "credential_plugins.json" {
			doc["minProperties"] = 1
		}
		if err := add(schemaBase+url, doc); err != nil {
			return nil, err
		}
	}
	common, err := readDoc("schemas/common.json")
	if err != nil {
		return nil, err
	}
	if err := add(schemaBase+"common.json", common); err != nil {
		return nil, err
	}
	for _, name := range schemaNames {
		doc, err := readDoc("schemas/" + name + ".json")
		if err != nil {
			return nil, err
		}
		if err := add(schemaBase+name+".json", doc); err != nil {
			return nil, err
		}
		s.docs[name] = doc
	}
	for _, name := range schemaNames {
		sch, err := c.Compile(schemaBase + name + ".json")
		if err != nil {
			return nil, fmt.Errorf("cannot compile schema %s: %w", name, err)
		}
		s.coll[name] = sch
	}
	for _, name := range s.names {
		p := s.plugins[name]
		if p.Schema, err = c.Compile(schemaBase + "plugins/" + name + "/schema.json"); err != nil {
			return nil, fmt.Errorf("cannot compile plugin %s schema: %w", name, err)
		}
		if p.Docs["consumer_schema"] != nil {
			if p.Consumer, err = c.Compile(schemaBase + "plugins/" + name + "/consumer_schema.json"); err != nil {
				return nil, fmt.Errorf("cannot compile plugin %s consumer schema: %w", name, err)
			}
		}
		if p.Docs["metadata_schema"] != nil {
			if p.Metadata, err = c.Compile(schemaBase + "plugins/" + name + "/metadata_schema.json"); err != nil {
				return nil, fmt.Errorf("cannot compile plugin %s metadata schema: %w", name, err)
			}
		}
	}
	// The served upstream document is the shared definition itself.
	s.docs["upstream"] = common["$defs"].(map[string]any)["upstream"]
	return s, nil
}

func readDoc(path string) (map[string]any, error) {
	b, err := schemaFS.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", path, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not an object", path)
	}
	return m, nil
}

// restrict keeps only the plugins built reports as run by the data plane.
func (s *Schemas) restrict(built func(string) bool) {
	names := s.names[:0:0]
	for _, n := range s.names {
		if built(n) {
			names = append(names, n)
		} else {
			delete(s.plugins, n)
		}
	}
	s.names = names
}

// PluginNames returns the built-in plugins, sorted.
func (s *Schemas) PluginNames() []string { return s.names }

// validate checks a decoded body (json.Number numbers) against a
// collection's schema and the plugins' own rules; the error text is the
// admin API's error_msg.
func (s *Schemas) validate(schema string, v any) error {
	sch := s.coll[schema]
	if sch == nil {
		return fmt.Errorf("BUG: no schema %q", schema)
	}
	if err := sch.Validate(v); err != nil {
		if ve, ok := err.(*jsonschema.ValidationError); ok {
			return fmt.Errorf("invalid configuration: %s", describe(ve))
		}
		return fmt.Errorf("invalid configuration: %v", err)
	}
	obj, _ := v.(map[string]any)
	if plugins, ok := obj["plugins"].(map[string]any); ok {
		for name, conf := range plugins {
			p := s.plugins[name]
			if p == nil {
				// Schema-valid but not built into this gw (Config.Built).
				return fmt.Errorf("unknown plugin [%s]", name)
			}
			if p.check != nil {
				if err := p.check(conf); err != nil {
					return fmt.Errorf("failed to check the configuration of plugin %s err: %v", name, err)
				}
			}
		}
	}
	return nil
}

// validateMetadata checks a plugin metadata body.
func (s *Schemas) validateMetadata(name string, v any) error {
	p := s.plugins[name]
	if p == nil {
		return fmt.Errorf("unknown plugin [%s]", name)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("invalid configuration: wrong type: expected object")
	}
	if p.Metadata == nil {
		// A plugin without a metadata schema takes any object (spec: "any
		// properties").
		return nil
	}
	c := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "id" && k != "create_time" && k != "update_time" {
			c[k] = v
		}
	}
	if err := p.Metadata.Validate(c); err != nil {
		if ve, ok := err.(*jsonschema.ValidationError); ok {
			return fmt.Errorf("invalid configuration: %s", describe(ve))
		}
		return fmt.Errorf("invalid configuration: %v", err)
	}
	if name == "prometheus" {
		// Structural labels (the `type` of http_latency and bandwidth) keep
		// series apart and cannot be disabled (spec: a 400).
		if dl, ok := c["disabled_labels"].(map[string]any); ok {
			for metric, ls := range dl {
				for _, l := range ls.([]any) {
					if l == "type" {
						return fmt.Errorf("failed to check the configuration of plugin prometheus err: label type of %s is structural and cannot be disabled", metric)
					}
				}
			}
		}
	}
	return nil
}

var printer = message.NewPrinter(language.English)

// describe turns a validation error into one APISIX-style sentence, e.g.
// `property "upstream" validation failed: property "nodes" is required`.
func describe(e *jsonschema.ValidationError) string {
	e = pick(e)
	loc := e.InstanceLocation
	var leaf string
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		return prefix(loc) + fmt.Sprintf("property %q is required", k.Missing[0])
	case *kind.AdditionalProperties:
		if len(loc) == 1 && loc[0] == "plugins" {
			return "unknown plugin [" + strings.Join(k.Properties, ", ") + "]"
		}
		leaf = "additional properties forbidden, found " + strings.Join(k.Properties, ", ")
	case *kind.FalseSchema:
		if len(loc) > 0 {
			return prefix(loc[:len(loc)-1]) + fmt.Sprintf("property %q cannot be used together with the other field set", loc[len(loc)-1])
		}
		leaf = "not allowed"
	case *kind.AnyOf, *kind.OneOf:
		if missing := requiredAlternatives(e); len(missing) > 0 {
			return prefix(loc) + "at least one of " + strings.Join(missing, ", ") + " is required"
		}
		leaf = "value should match only one schema, but matches none"
		if _, ok := k.(*kind.OneOf); ok && len(e.Causes) == 0 {
			leaf = "value should match only one schema, but matches more than one"
		}
	case *kind.Type:
		leaf = fmt.Sprintf("wrong type: expected %s, got %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.MinLength:
		leaf = fmt.Sprintf("string too short, expected at least %d, got %d", k.Want, k.Got)
	case *kind.MaxLength:
		leaf = fmt.Sprintf("string too long, expected at most %d, got %d", k.Want, k.Got)
	case *kind.Enum, *kind.Const:
		leaf = "matches none of the enum values"
	case *kind.Pattern:
		leaf = fmt.Sprintf("failed to match pattern %q with %q", k.Want, truncate(k.Got))
	case *kind.Minimum:
		leaf = fmt.Sprintf("expected %s to be at least %s", k.Got.FloatString(3), k.Want.FloatString(3))
	case *kind.Maximum:
		leaf = fmt.Sprintf("expected %s to be at most %s", k.Got.FloatString(3), k.Want.FloatString(3))
	case *kind.ExclusiveMinimum:
		leaf = fmt.Sprintf("expected %s to be greater than %s", k.Got.FloatString(3), k.Want.FloatString(3))
	case *kind.MinItems:
		leaf = fmt.Sprintf("expect array to have at least %d items", k.Want)
	case *kind.MaxItems:
		leaf = fmt.Sprintf("expect array to have at most %d items", k.Want)
	case *kind.UniqueItems:
		leaf = fmt.Sprintf("expected unique items but items %d and %d are equal", k.Duplicates[0]+1, k.Duplicates[1]+1)
	case *kind.MinProperties:
		leaf = fmt.Sprintf("expect object to have at least %d properties", k.Want)
	default:
		leaf = e.ErrorKind.LocalizedString(printer)
	}
	return prefix(loc) + leaf
}

// pick descends to the most specific failure: through wrappers ($ref,
// allOf, if/then) to their first cause, and into the alternative of an
// anyOf/oneOf that got furthest into the value.
func pick(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			if len(requiredAlternatives(e)) > 0 {
				return e
			}
			best := e.Causes[0]
			for _, c := range e.Causes[1:] {
				if depth(c) > depth(best) {
					best = c
				}
			}
			e = best
		default:
			e = e.Causes[0]
		}
	}
	return e
}

func depth(e *jsonschema.ValidationError) int {
	d := len(e.InstanceLocation)
	for _, c := range e.Causes {
		if x := depth(c); x > d {
			d = x
		}
	}
	if _, ok := e.ErrorKind.(*kind.Type); ok && len(e.Causes) == 0 {
		d-- // a type mismatch is the least telling alternative
	}
	return d
}

// requiredAlternatives returns the quoted property names when every
// alternative failed only for a missing property.
func requiredAlternatives(e *jsonschema.ValidationError) []string {
	var out []string
	for _, c := range e.Causes {
		for len(c.Causes) == 1 {
			c = c.Causes[0]
		}
		r, ok := c.ErrorKind.(*kind.Required)
		if !ok || len(c.Causes) > 0 {
			return nil
		}
		out = append(out, strconv.Quote(r.Missing[0]))
	}
	return out
}

func prefix(loc []string) string {
	var sb strings.Builder
	if len(loc) >= 2 && loc[0] == "plugins" {
		sb.WriteString("failed to check the configuration of plugin " + loc[1] + " err: ")
		loc = loc[2:]
	}
	for _, p := range loc {
		if _, err := strconv.Atoi(p); err == nil {
			sb.WriteString("failed to validate item " + p + ": ")
			continue
		}
		sb.WriteString(fmt.Sprintf("property %q validation failed: ", p))
	}
	return sb.String()
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// uniqueInstanceNames: ai-proxy-multi instance names must be unique.
func uniqueInstanceNames(conf any) error {
	m, _ := conf.(map[string]any)
	list, _ := m["instances"].([]any)
	seen := map[string]bool{}
	for _, it := range list {
		inst, _ := it.(map[string]any)
		name, _ := inst["name"].(string)
		if seen[name] {
			return fmt.Errorf("duplicate instance name %q", name)
		}
		seen[name] = true
	}
	return nil
}

// decodeJSON decodes a request body keeping numbers exact (json.Number),
// as the schema library expects.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// Validate checks a JSON body against a collection's schema ("route",
// "upstream", "ssl", "secrets/vault", ...): the write path's validation
// without the store (the fuzz target's entry).
func (s *Schemas) Validate(schema string, body []byte) error {
	v, err := decodeJSON(body)
	if err != nil {
		return err
	}
	return s.validate(schema, v)
}
