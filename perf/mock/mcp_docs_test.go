package mock_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"gw/edge/mcp"
	"gw/perf/mock"
)

// TestMockDocsOpenAPI: the mock's /docs API (examples/gw.yaml's type
// openapi server) publishes a document gw converts to two tools, and its
// operations answer.
func TestMockDocsOpenAPI(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	get := func(path string) (int, string) {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, doc := get("/docs/openapi.json")
	if code != 200 {
		t.Fatalf("openapi.json: %d", code)
	}
	spec, err := mcp.ParseOpenAPI([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Tools) != 2 || spec.Tool("get_page") == nil || spec.Tool("search") == nil {
		t.Fatalf("tools: %+v", spec.Tools)
	}
	if code, body := get("/docs/pages/intro?lang=fr"); code != 200 || body != `{"lang":"fr","slug":"intro","text":"Page intro of the gw mock docs"}` {
		t.Errorf("get_page: %d %s", code, body)
	}
	resp := post(t, c, base+"/docs/search", `{"q":"mcp"}`, "Content-Type", "application/json")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"results":["getting-started","mcp"]`) {
		t.Errorf("search: %d %s", resp.StatusCode, b)
	}
	resp = post(t, c, base+"/docs/search", `{}`, "Content-Type", "application/json")
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("search without q: %d", resp.StatusCode)
	}
}
