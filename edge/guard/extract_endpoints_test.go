package guard

import (
	"errors"
	"testing"
)

// TestExtractEndpoints: the texts of embeddings, completions and rerank
// bodies, each judged on its own; token IDs are not text (ErrTokens, so
// the fail-open rules decide); masks are written back in place.
func TestExtractEndpoints(t *testing.T) {
	f := func(format Format, body, want string, wantErr error) {
		t.Helper()
		var e Exec
		var x Extractor
		err := x.Extract(&e, format, []byte(body))
		if !errors.Is(err, wantErr) && !(err == nil && wantErr == nil) {
			t.Fatalf("%s: error %v; want %v", body, err, wantErr)
		}
		if got := describe(&e); got != want {
			t.Fatalf("%s:\ngot:\n%swant:\n%s", body, got, want)
		}
	}
	f(EmbeddingsRequest, `{"model":"m","input":"one \u00e9"}`, "user/content/L=one é\n", nil)
	f(EmbeddingsRequest, `{"input":["a","b"],"model":"m"}`, "user/content/L=a\nuser/content/L=b\n", nil)
	f(EmbeddingsRequest, `{"input":[1,2]}`, "", ErrTokens)
	f(EmbeddingsRequest, `{"input":[[1],[2]]}`, "", ErrTokens)
	f(EmbeddingsRequest, `{"input":{"x":1}}`, "", ErrBody)
	f(EmbeddingsRequest, `{"model":"m"}`, "", nil)
	f(CompletionsRequest, `{"prompt":["p1","p2"]}`, "user/content/L=p1\nuser/content/L=p2\n", nil)
	f(RerankRequest, `{"documents":["d1",{"text":"d2","title":"t"},7],"query":"q"}`,
		"user/content/L=d1\nuser/content/L=d2\nuser/content/L=t\nuser/content/L=q\n", nil)
	f(CompletionsAnswer, `{"choices":[{"text":"out1"},{"text":"out2"}]}`, "assistant/content/L=out1\nassistant/content/L=out2\n", nil)
	f(ImagesRequest, `{"prompt":"draw"}`, "user/content/L=draw\n", nil)
	f(ImagesAnswer, `{"data":[{"b64_json":"AA==","revised_prompt":"rp"},{"url":"u"}]}`, "assistant/content/L=rp\n", nil)
	f(TextlessAnswer, `{"data":[{"embedding":[0.1]}]}`, "", nil)

	var e Exec
	var x Extractor
	body := `{"model":"m","input":["keep","mail a@b.c"]}`
	if err := x.Extract(&e, EmbeddingsRequest, []byte(body)); err != nil {
		t.Fatal(err)
	}
	e.over = make([][]byte, len(e.Texts()))
	e.over[1], e.changed[1] = []byte("mail [EMAIL]"), true
	if got := string(x.Rewrite(nil, &e)); got != `{"model":"m","input":["keep","mail [EMAIL]"]}` {
		t.Fatalf("rewrite: %s", got)
	}
}
