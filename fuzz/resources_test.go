// Package fuzz holds the fuzz targets of every parser and transcoder in gw.
// `make fuzz FUZZTIME=10s` runs each; `make test` runs each for a few seconds.
package fuzz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gw/admin/resources"
)

// fuzzEnv answers every variable with a marker value so that leaks show.
func fuzzEnv(name string) (string, bool) {
	switch name {
	case "UNSET":
		return "", false
	case "EMPTY":
		return "", true
	}
	return "SECRETVALUE", true
}

func addYAMLSeeds(f *testing.F) {
	for _, glob := range []string{"../examples/*.yaml", "../admin/resources/testdata/*.yaml"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("_format_version: \"1\"\nmodels:\n  - display_name: a\n    provider: openai\n    model_name: m\n    provider_key: k\n"))
	f.Add([]byte("_format_version: 1\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("_format_version: \"1\"\nprovider_keys:\n  - &p {display_name: a, api_key: ${K}}\n  - <<: *p\n"))
	f.Add([]byte("---\n---\n"))
}

// FuzzResourcesLoad: the loader never panics, never leaks a variable's value
// in an error, and is deterministic (same input → same IDs and errors).
func FuzzResourcesLoad(f *testing.F) {
	addYAMLSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		r1 := resources.Load(data, fuzzEnv)
		for _, e := range append(r1.Errors, r1.Warnings...) {
			if strings.Contains(e.String(), "SECRETVALUE") && !strings.Contains(string(data), "SECRETVALUE") {
				t.Fatalf("error leaks a variable value: %s", e.String())
			}
		}
		r2 := resources.Load(data, fuzzEnv)
		if len(r1.Errors) != len(r2.Errors) || len(r1.IDs) != len(r2.IDs) {
			t.Fatalf("non-deterministic load")
		}
		for i := range r1.IDs {
			if r1.IDs[i] != r2.IDs[i] {
				t.Fatalf("non-deterministic ID %v vs %v", r1.IDs[i], r2.IDs[i])
			}
		}
		if (r1.Resources == nil) != (len(r1.Errors) > 0) {
			t.Fatalf("resources present with errors, or missing without")
		}
	})
}

// FuzzResourcesInterpolate: no panic; an error never holds a value; a string
// without '$' is unchanged; without errors no "${NAME}" survives unless escaped.
func FuzzResourcesInterpolate(f *testing.F) {
	for _, s := range []string{"", "plain", "${A}", "x${A}y", "$$", "$${A}", "$A", "${", "${}", "${A:-b}", "${UNSET}", "${EMPTY}", "$$$${A}", "${A}${B}", "€${A}€"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, refs, err := resources.Interpolate(s, fuzzEnv)
		if err != nil {
			if strings.Contains(err.Error(), "SECRETVALUE") && !strings.Contains(s, "SECRETVALUE") {
				t.Fatalf("error leaks a value: %v", err)
			}
			return
		}
		if !strings.Contains(s, "$") && out != s {
			t.Fatalf("string without $ changed: %q -> %q", s, out)
		}
		if strings.Count(out, "SECRETVALUE") < refs {
			t.Fatalf("refs=%d but output %q", refs, out)
		}
		if !strings.Contains(s, "$$") && strings.Contains(out, "${") && !strings.Contains(s, "SECRETVALUE") {
			// every ${...} in the input was either resolved or an error
			t.Fatalf("unresolved reference survived: %q -> %q", s, out)
		}
	})
}
