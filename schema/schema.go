// Package schema produces the JSON Schema (draft 2020-12) of the resource
// file: the structure comes from the loader itself (resources.DescribeSchema
// runs every collection's decoder in describe mode), the descriptions from
// the field tables of docs/CONFIG.md. `gw schema` prints it; gw.schema.json
// in this directory is its committed copy (make schema).
package schema

import (
	"encoding/json"
	"sort"
	"strings"

	"gw/admin/resources"
	"gw/docs"
)

// ID is the schema's $id. The project has no published URL yet, so it is a
// URN; editors load the schema by path or by wherever the file is hosted.
const ID = "urn:gw:schema:resource-file:1"

// Generate returns the schema as indented JSON with a trailing newline.
func Generate() ([]byte, error) {
	s, _ := Build()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Build returns the schema tree and the fields that have no description
// ("collection path", sorted).
func Build() (map[string]any, []string) {
	s := resources.DescribeSchema()
	s["$id"] = ID
	s["title"] = "gw resource file"
	s["description"] = "The declarative resource file of the gw AI gateway (docs/CONFIG.md). Produced from the loader by `gw schema`."
	fd := ParseFieldTables(docs.ConfigMD, resources.Collections)
	a := &annotator{docs: fd, missing: map[string]bool{}}
	props := s["properties"].(map[string]any)
	props["_format_version"].(map[string]any)["description"] = "Format of this file; must be the string \"1\"."
	for _, coll := range resources.Collections {
		cs := props[coll].(map[string]any)
		cs["description"] = "The " + coll + " collection (docs/CONFIG.md#" + coll + ")."
		a.walk(cs["items"], coll, "", "")
	}
	missing := make([]string, 0, len(a.missing))
	for k := range a.missing {
		missing = append(missing, k)
	}
	sort.Strings(missing)
	return s, missing
}

type annotator struct {
	docs    FieldDocs
	missing map[string]bool
}

// walk sets the description of every property under node (a schema of
// the mapping at path in collection coll, in a variant of guardrail or
// exporter kind when kind is set).
func (a *annotator) walk(node any, coll, kind, path string) {
	m, ok := node.(map[string]any)
	if !ok {
		return
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := m[key].([]any); ok {
			for _, alt := range alts {
				a.walk(alt, coll, kind, path)
			}
		}
	}
	if it, ok := m["items"]; ok {
		a.walk(it, coll, kind, path+"[]")
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		a.walk(ap, coll, kind, path)
	}
	props, _ := m["properties"].(map[string]any)
	if path == "" {
		if k, ok := props["kind"].(map[string]any); ok {
			if c, ok := k["const"].(string); ok {
				kind = c
			}
		}
	}
	for name, p := range props {
		ps, ok := p.(map[string]any)
		if !ok {
			continue // false: rejected in this shape
		}
		fp := name
		if path != "" {
			fp = path + "." + name
		}
		if _, has := ps["description"]; !has {
			if d := a.lookup(coll, kind, fp); d != "" {
				ps["description"] = d
			} else if ps["type"] != "null" {
				a.missing[coll+" "+fp] = true
			}
		}
		a.walk(ps, coll, kind, fp)
	}
}

// lookup finds a description: the kind's table, the collection's table,
// then the table of a parent block documented on its own (## rate_limit).
func (a *annotator) lookup(coll, kind, path string) string {
	if kind != "" {
		if d := a.docs[coll+"#"+kind+"/"+path]; d != "" {
			return d
		}
	}
	if d := a.docs[coll+"/"+path]; d != "" {
		return d
	}
	// Tables write list items without [] at times ("targets.model").
	if d := a.docs[coll+"/"+strings.ReplaceAll(path, "[]", "")]; d != "" {
		return d
	}
	segs := strings.Split(path, ".")
	for i := 1; i < len(segs); i++ {
		head := strings.TrimSuffix(segs[i-1], "[]")
		if d := a.docs[head+"/"+strings.Join(segs[i:], ".")]; d != "" {
			return d
		}
	}
	return ""
}
