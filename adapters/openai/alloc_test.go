//go:build !race

package openai

import (
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/sse/rawjson"
)

// TestAllocs guards the steady state: BuildChat (every path) and the
// per-chunk helpers allocate nothing once pools and buffers are warm.
func TestAllocs(t *testing.T) {
	f := func(name string, fn func()) {
		t.Helper()
		fn() // warm pools and buffers
		if n := testing.AllocsPerRun(200, fn); n != 0 {
			t.Errorf("%s: %v allocs per run; want 0", name, n)
		}
	}
	req := &fasthttp.Request{}
	for _, rename := range []string{"end_user_id", "user"} {
		a, err := compile(benchKey(rename))
		if err != nil {
			t.Fatal(err)
		}
		in := benchInput(chatBody2K)
		f("BuildChat rename "+rename, func() {
			req.Reset()
			if err := a.BuildChat(req, in); err != nil {
				t.Fatal(err)
			}
		})
	}
	plain, _ := compile(key(nil))
	in := &adapters.ChatInput{Body: chatBody2K, UpstreamModel: "gpt-4o"}
	f("BuildChat model only", func() {
		req.Reset()
		if err := plain.BuildChat(req, in); err != nil {
			t.Fatal(err)
		}
	})
	az, err := compile(key(func(k *testKey) {
		k.azure, k.BaseURL = true, "https://r.openai.azure.com"
	}))
	if err != nil {
		t.Fatal(err)
	}
	azIn := &adapters.ChatInput{Body: chatBody2K, UpstreamModel: "gpt-4o-deploy"}
	f("BuildChat azure dated", func() {
		req.Reset()
		if err := az.BuildChat(req, azIn); err != nil {
			t.Fatal(err)
		}
	})
	alias := rawjson.AppendQuote(nil, "team-default")
	dst := make([]byte, 0, 1024)
	f("RewriteModel", func() { dst = RewriteModel(dst[:0], chunk, alias) })
	f("IsUsageOnlyChunk", func() { sinkBool = IsUsageOnlyChunk(usageChunk) })
	f("ExtractUsage", func() { sinkUsage, sinkBool = ExtractUsage(usageChunk) })
}

func TestRenameReasoningAllocs(t *testing.T) {
	body := []byte(`{"choices":[{"index":0,"delta":{"reasoning":"step"},"finish_reason":null}]}`)
	dst := make([]byte, 0, 256)
	RenameReasoning(dst, body, "reasoning")
	if n := testing.AllocsPerRun(100, func() { RenameReasoning(dst[:0], body, "reasoning") }); n != 0 {
		t.Fatalf("RenameReasoning: %v allocs; want 0", n)
	}
}
