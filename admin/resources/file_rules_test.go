package resources

import (
	"strings"
	"testing"
)

// TestFileRules has one case per numbered file rule of the spec.
func TestFileRules(t *testing.T) {
	bad := func(name, src, want string) {
		t.Run(name, func(t *testing.T) { loadErr(t, src, want) })
	}
	// 1. exactly one document.
	bad("multi-doc", baseFile+"---\n_format_version: \"1\"\n", "more than one YAML document")
	bad("trailing-empty-doc", baseFile+"---\n", "more than one YAML document")
	bad("empty-file", "", "file is empty")
	bad("syntax", "_format_version: \"1\"\nmodels: [\n", "invalid YAML")
	// 4. top level is a mapping; _format_version required.
	bad("top-sequence", "- a\n- b\n", "top level must be a mapping, got a sequence")
	bad("top-scalar", "hello\n", "top level must be a mapping, got a string")
	bad("no-version", "models: []\n", "_format_version: required")
	// 5. _format_version must be the quoted string "1".
	bad("version-int", "_format_version: 1\n", `_format_version: must be the string "1", not the integer 1; quote it`)
	bad("version-2", "_format_version: \"2\"\n", `_format_version: unsupported version "2"`)
	bad("version-float", "_format_version: 1.0\n", `_format_version: must be the string "1", got a number`)
	bad("version-null", "_format_version:\n", "_format_version: required")
	// 6. string keys at every level.
	bad("int-key-top", "_format_version: \"1\"\n1: x\n", "mapping keys must be strings, got an integer")
	bad("int-key-nested", baseFile+"    rate_limit: {1: 2}\n", "models[0] (display_name=gpt): rate_limit: mapping keys must be strings, got an integer")
	bad("bool-key", baseFile+"    true: 1\n", "mapping keys must be strings, got a boolean")
	// duplicate keys are errors.
	bad("dup-key", baseFile+"    model_name: other\n", "models[0] (display_name=gpt): model_name: duplicate key")
	bad("dup-collection", baseFile+"models: []\n", "models: duplicate key")
	// 7. collections are sequences of mappings.
	bad("collection-mapping", "_format_version: \"1\"\nmodels: {a: 1}\n", "models: must be a sequence of mappings, got a mapping")
	bad("entry-scalar", "_format_version: \"1\"\nmodels: [x]\n", "models[0]: must be a mapping, got a string")
	// 8. unknown collections and unknown fields at any level.
	bad("unknown-collection", baseFile+"routes: []\n", "routes: unknown collection")
	bad("unknown-field", baseFile+"    colour: red\n", "models[0] (display_name=gpt): colour: unknown field")
	bad("unknown-nested", baseFile+"    cooldown: {enabled: true, colour: red}\n", "models[0] (display_name=gpt): cooldown.colour: unknown field")
	bad("unknown-deep", baseFile+"  - display_name: grp\n    routing:\n      targets: [{model: gpt, colour: red}]\n", "models[1] (display_name=grp): routing.targets[0].colour: unknown field")
	// 9. merge keys are not expanded.
	bad("merge-key", `_format_version: "1"
provider_keys:
  - &pk
    display_name: oa
    api_key: ${OPENAI_KEY}
  - <<: *pk
    display_name: ob
`, "provider_keys[1] (display_name=ob): <<: unknown field (YAML merge keys are not expanded)")
	// 10. no entry accepts id.
	bad("id-field", baseFile+"    id: 63e50ab2-677a-54d3-8d1e-c0cb29ceae94\n", "models[0] (display_name=gpt): id: unknown field")
	// 11. identity non-empty and unique; duplicates name both entries.
	bad("empty-identity", baseFile+"  - display_name: \"\"\n    provider: openai\n    model_name: x\n    provider_key: oa\n", "models[1]: display_name: must not be empty")
	bad("missing-identity", baseFile+"  - provider: openai\n    model_name: x\n    provider_key: oa\n", "models[1]: display_name: required")
	bad("dup-identity", baseFile+"  - display_name: gpt\n    provider: openai\n    model_name: x\n    provider_key: oa\n", "models[1] (display_name=gpt): display_name: duplicate identity; also used by models[0]")
}

func TestFileRulesAccepted(t *testing.T) {
	// 7. absent or null collections load as empty.
	r := mustLoad(t, "_format_version: \"1\"\nmodels:\nprovider_keys: ~\n")
	if len(r.Models) != 0 || len(r.ProviderKeys) != 0 {
		t.Fatalf("null collections not empty")
	}
	// 9. anchors and aliases may reuse values.
	r = mustLoad(t, `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${OPENAI_KEY}
    request:
      default_headers: &hdrs
        x-team: blue
  - display_name: ob
    api_key: ${OPENAI_KEY}
    request:
      default_headers: *hdrs
`)
	if len(r.ProviderKeys[1].Request.DefaultHeaders) != 1 || r.ProviderKeys[1].Request.DefaultHeaders[0].Name != "x-team" {
		t.Fatalf("alias not reused: %+v", r.ProviderKeys[1].Request.DefaultHeaders)
	}
	// A leading document marker is still one document.
	mustLoad(t, "---\n"+baseFile)
}

func TestDerivedIDs(t *testing.T) {
	// Fixed values: the same file yields the same IDs in every process.
	if got, want := DeriveID(KindProviderKey, "oa"), DeriveID("provider_key", "oa"); got != want {
		t.Fatal("kind constant drift")
	}
	r := Load([]byte(baseFile), envOf(testEnv))
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	ids := map[string]string{}
	for _, id := range r.IDs {
		ids[id.Collection+"/"+id.Identity] = id.ID
	}
	// uuid5(63e50ab2-677a-54d3-8d1e-c0cb29ceae94, "provider_key/oa"), computed independently with Python's uuid.uuid5.
	if ids["provider_keys/oa"] != "954fec90-160f-52e3-af94-a692cff3a169" {
		t.Fatalf("provider_key id = %s", ids["provider_keys/oa"])
	}
	if ids["models/gpt"] != DeriveID("model", "gpt") {
		t.Fatalf("model id = %s", ids["models/gpt"])
	}
	// Reference by derived ID resolves.
	src := strings.Replace(baseFile, "provider_key: oa", "provider_key_id: "+ids["provider_keys/oa"], 1)
	r2 := mustLoad(t, src)
	if r2.Models[0].ProviderKey == nil || r2.Models[0].ProviderKeyName != "oa" {
		t.Fatalf("provider_key_id not resolved")
	}
}
