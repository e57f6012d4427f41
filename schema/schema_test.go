package schema

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "go.yaml.in/yaml/v3"

	"gw/admin/resources"
)

// generated is Generate's output, produced once per test binary.
var generated struct {
	once sync.Once
	b    []byte
	err  error
}

// compiled compiles the schema that Generate produces (not the committed
// copy: TestSchemaCommand in cmd/gw keeps the two equal).
func compiled(t *testing.T) *jsonschema.Schema {
	t.Helper()
	generated.once.Do(func() { generated.b, generated.err = Generate() })
	b, err := generated.b, generated.err
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(ID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(ID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// instance converts a YAML document to the JSON value a YAML language
// server validates (timestamps become strings, as in the editor).
func instance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("YAML: %v", err)
	}
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		t.Fatalf("to JSON: %v", err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return v
}

// testEnv gives every ${VAR} a value the loader accepts in most fields.
func testEnv(name string) (string, bool) {
	u := strings.ToUpper(name)
	switch {
	case strings.Contains(u, "URL") || strings.Contains(u, "BASE") || strings.Contains(u, "ENDPOINT") || strings.Contains(u, "HOST"):
		return "https://upstream.example.com/v1", true
	case strings.Contains(u, "PEM") || strings.Contains(u, "CERT"):
		return "", false
	}
	// Long enough for secrets with a minimum length (hmac_secret: 32 bytes).
	return "test-value-" + strings.ToLower(name) + "-0123456789abcdef0123456789abcdef", true
}

// repoFiles returns every resource file in the repository: YAML files with
// _format_version, and the string literals of Go test files that hold one.
func repoFiles(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" || n == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml"):
			b, err := os.ReadFile(path)
			if err == nil && bytes.Contains(b, []byte("_format_version")) {
				out[path] = b
			}
		case strings.HasSuffix(path, "_test.go"):
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || !strings.Contains(lit.Value, "_format_version") {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil {
					out[fset.Position(lit.Pos()).String()] = []byte(s)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRepositoryFilesValidate: every resource file in the repository that
// the loader accepts validates against the schema. Files the loader rejects
// (negative tests, templates, files that need other variables) are counted
// and skipped.
func TestRepositoryFilesValidate(t *testing.T) {
	s := compiled(t)
	files := repoFiles(t)
	valid := 0
	for _, name := range descKeys(files) {
		data := files[name]
		if r := resources.Load(data, testEnv); len(r.Errors) > 0 {
			continue
		}
		valid++
		if err := s.Validate(instance(t, data)); err != nil {
			t.Errorf("%s: the loader accepts it, the schema rejects it:\n%v", name, err)
		}
	}
	t.Logf("%d resource files found, %d accepted by the loader and checked", len(files), valid)
	if valid < 20 {
		t.Fatalf("only %d valid resource files found; the search is broken", valid)
	}
}

func descKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
