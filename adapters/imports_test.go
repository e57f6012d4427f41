package adapters_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoAdminImports keeps the import graph pointing down: no package under
// adapters/ may import gw/admin or anything below it, directly or through
// another gw package, in its own files or its tests (admin → adapters is
// the allowed direction: admin/snapshot compiles provider keys into the
// adapters' config types).
//
// It reads import clauses with go/parser (every .go file, whatever its build
// tags) rather than running the go command, so it needs no toolchain.
func TestNoAdminImports(t *testing.T) {
	const module = "gw"
	root := filepath.Join("..")
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(b), "module "+module+"\n") {
		t.Fatalf("cannot find the module root of %q above adapters/: %v", module, err)
	}
	forbidden := func(p string) bool { return p == module+"/admin" || strings.HasPrefix(p, module+"/admin/") }

	// imports returns the gw imports of the package in dir and the file
	// each comes from; tests are included only for the adapters packages.
	imports := func(dir string, tests bool) map[string]string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("cannot read %s: %v", dir, err)
		}
		out := map[string]string{}
		fset := token.NewFileSet()
		for _, e := range ents {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || (!tests && strings.HasSuffix(name, "_test.go")) {
				continue
			}
			file := filepath.Join(dir, name)
			f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatalf("cannot parse %s: %v", file, err)
			}
			for _, s := range f.Imports {
				p, err := strconv.Unquote(s.Path.Value)
				if err != nil {
					t.Fatalf("%s: bad import %s", file, s.Path.Value)
				}
				if p == module || strings.HasPrefix(p, module+"/") {
					out[p] = file
				}
			}
		}
		return out
	}

	var roots []string
	err := filepath.WalkDir(filepath.Join(root, "adapters"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() {
			roots = append(roots, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(roots) < 2 {
		t.Fatalf("found %d package directories under adapters/; the walk is broken", len(roots))
	}

	for _, dir := range roots {
		rel, _ := filepath.Rel(root, dir)
		pkg := path.Join(module, filepath.ToSlash(rel))
		// Breadth-first over gw packages; via[p] is the package that
		// imports p, for the error message.
		via := map[string]string{pkg: ""}
		queue := []string{pkg}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			curDir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(cur, module), "/")))
			for imp, file := range imports(curDir, cur == pkg) {
				if forbidden(imp) {
					chain := []string{imp, cur}
					for p := via[cur]; p != ""; p = via[p] {
						chain = append(chain, p)
					}
					for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
						chain[i], chain[j] = chain[j], chain[i]
					}
					t.Errorf("%s imports %s (%s in %s); adapters must not import admin",
						pkg, imp, strings.Join(chain, " → "), file)
					continue
				}
				if _, seen := via[imp]; !seen {
					via[imp] = cur
					queue = append(queue, imp)
				}
			}
		}
	}
}
