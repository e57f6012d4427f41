package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
)

// TestEndpointURLs: each endpoint's URL on every base shape, the body
// with only the model rewritten, and the credential.
func TestEndpointURLs(t *testing.T) {
	f := func(mod func(k *testKey), e adapters.Endpoint, model, wantURL, wantAuth string) {
		t.Helper()
		a, err := compile(key(mod))
		if err != nil {
			t.Fatal(err)
		}
		req := &fasthttp.Request{}
		in := &adapters.ChatInput{Body: []byte(`{"model":"alias","input":["a","b"],"encoding_format":"base64"}`), UpstreamModel: model}
		if err := adapters.BuildEndpoint(a, e, req, in); err != nil {
			t.Fatalf("%s: %v", wantURL, err)
		}
		if got := req.URI().String(); got != wantURL {
			t.Errorf("url %s; want %s", got, wantURL)
		}
		if got := string(req.Body()); got != `{"model":"`+model+`","input":["a","b"],"encoding_format":"base64"}` {
			t.Errorf("body %s", got)
		}
		if got := string(req.Header.Peek("Authorization")) + string(req.Header.Peek("Api-Key")); got != wantAuth {
			t.Errorf("credential %q; want %q", got, wantAuth)
		}
	}
	f(nil, adapters.EndpointEmbeddings, "text-embedding-3-small", "https://api.openai.com/v1/embeddings", "Bearer sk-upstream")
	f(func(k *testKey) { k.BaseURL = "http://h:1/v1?x=1" }, adapters.EndpointCompletions, "m", "http://h:1/v1/completions?x=1", "Bearer sk-upstream")
	f(func(k *testKey) { k.BaseURL = "http://h:1/v1"; k.Provider = "jina" }, adapters.EndpointRerank, "jr", "http://h:1/v1/rerank", "Bearer sk-upstream")
	f(nil, adapters.EndpointImages, "gpt-image-1", "https://api.openai.com/v1/images/generations", "Bearer sk-upstream")
	f(nil, adapters.EndpointSpeech, "tts-1", "https://api.openai.com/v1/audio/speech", "Bearer sk-upstream")
	f(nil, adapters.EndpointVideos, "sora-2", "https://api.openai.com/v1/videos", "Bearer sk-upstream")
	azure := func(base string) func(k *testKey) {
		return func(k *testKey) { k.azure, k.BaseURL = true, base }
	}
	f(azure("https://r.openai.azure.com"), adapters.EndpointEmbeddings, "emb deploy",
		"https://r.openai.azure.com/openai/deployments/emb%20deploy/embeddings?api-version="+adapters.DefaultAzureAPIVersion, "sk-upstream")
	f(azure("https://r.openai.azure.com/openai/v1"), adapters.EndpointEmbeddings, "emb",
		"https://r.openai.azure.com/openai/v1/embeddings", "sk-upstream")
	f(azure("https://r.openai.azure.com/openai/deployments/d1?api-version=2025-01-01"), adapters.EndpointCompletions, "x",
		"https://r.openai.azure.com/openai/deployments/d1/completions?api-version=2025-01-01", "sk-upstream")
}

// TestEndpointCaps: the openai family serves embeddings and completions;
// rerank on openai-compatible providers only (not first-party OpenAI, not
// Azure).
func TestEndpointCaps(t *testing.T) {
	f := func(mod func(k *testKey), want ...adapters.Endpoint) {
		t.Helper()
		a, err := compile(key(mod))
		if err != nil {
			t.Fatal(err)
		}
		var c adapters.Caps
		for _, e := range want {
			c = c.With(e)
		}
		if got := adapters.CapsOf(a); got != c {
			t.Errorf("caps %b; want %b", got, c)
		}
	}
	up := []adapters.Endpoint{adapters.EndpointTranscriptions, adapters.EndpointTranslations, adapters.EndpointImageEdits}
	f(nil, append(up, adapters.EndpointEmbeddings, adapters.EndpointCompletions, adapters.EndpointImages, adapters.EndpointSpeech, adapters.EndpointVideos)...)
	f(func(k *testKey) { k.Provider = "cohere" }, append(up, adapters.EndpointEmbeddings, adapters.EndpointCompletions, adapters.EndpointRerank, adapters.EndpointImages, adapters.EndpointSpeech, adapters.EndpointVideos)...)
	f(func(k *testKey) { k.Provider = "cohere"; k.azure, k.BaseURL = true, "https://r.openai.azure.com" }, append(up, adapters.EndpointEmbeddings, adapters.EndpointCompletions, adapters.EndpointImages, adapters.EndpointSpeech)...)

	a, _ := compile(key(nil))
	if err := adapters.BuildEndpoint(a, adapters.EndpointRerank, &fasthttp.Request{}, &adapters.ChatInput{Body: []byte(`{}`)}); !errors.Is(err, adapters.ErrUnsupported) {
		t.Fatalf("rerank on first-party openai: %v", err)
	}
}

// TestEndpointStreamUsage: a completions stream the caller asked no usage
// for asks the upstream for it; a non-object body is ErrBody.
func TestEndpointStreamUsage(t *testing.T) {
	a, _ := compile(key(nil))
	req := &fasthttp.Request{}
	in := &adapters.ChatInput{Body: []byte(`{"model":"a","prompt":"hi","stream":true}`), UpstreamModel: "m", Stream: true, ForceUsage: true}
	if err := a.(adapters.CompletionsBuilder).BuildCompletions(req, in); err != nil {
		t.Fatal(err)
	}
	if got := string(req.Body()); !strings.Contains(got, `"stream_options":{"include_usage":true}`) || !strings.Contains(got, `"model":"m"`) {
		t.Fatalf("body %s", got)
	}
	in.Body = []byte(`{"model":"a","prompt":"hi","stream":true,"stream_options":{"include_obfuscation":false}}`)
	req.Reset()
	if err := a.(adapters.CompletionsBuilder).BuildCompletions(req, in); err != nil {
		t.Fatal(err)
	}
	if got := string(req.Body()); !strings.Contains(got, `"stream_options":{"include_obfuscation":false,"include_usage":true}`) {
		t.Fatalf("caller's stream options: %s", got)
	}
	in.Body = []byte(`["x"]`)
	if err := a.(adapters.EmbeddingsBuilder).BuildEmbeddings(&fasthttp.Request{}, in); !errors.Is(err, adapters.ErrBody) {
		t.Fatalf("array body: %v", err)
	}
}

// TestVideoTaskURLs: task calls on api_base + /videos, the id as one path
// segment, the base's query and the caller's merged.
func TestVideoTaskURLs(t *testing.T) {
	f := func(base, method, id, sub, query, want string) {
		t.Helper()
		a, err := compile(key(func(k *testKey) { k.BaseURL = base }))
		if err != nil {
			t.Fatal(err)
		}
		req := &fasthttp.Request{}
		if err := a.(adapters.VideosBuilder).BuildVideoTask(req, &adapters.ChatInput{}, method, id, sub, []byte(query)); err != nil {
			t.Fatal(err)
		}
		if got := req.URI().String(); got != want || string(req.Header.Method()) != method || string(req.Header.Peek("Authorization")) != "Bearer sk-upstream" {
			t.Errorf("%s %s; want %s %s", req.Header.Method(), got, method, want)
		}
	}
	f("http://h/v1", "GET", "video_1", "", "", "http://h/v1/videos/video_1")
	f("http://h/v1", "GET", "video 1/..", "/content", "variant=thumbnail", "http://h/v1/videos/video%201%2F../content?variant=thumbnail")
	f("http://h/v1?k=v", "GET", "", "", "limit=2", "http://h/v1/videos?k=v&limit=2")
	f("http://h/v1", "DELETE", "video_1", "", "", "http://h/v1/videos/video_1")
	az, _ := compile(key(func(k *testKey) { k.azure, k.BaseURL = true, "https://r.openai.azure.com" }))
	if err := az.(adapters.VideosBuilder).BuildVideoTask(&fasthttp.Request{}, &adapters.ChatInput{}, "GET", "x", "", nil); !errors.Is(err, adapters.ErrUnsupported) {
		t.Fatalf("azure: %v", err)
	}
}

// TestBuildUpload: the upload endpoints are POSTed to api_base + their path
// (Azure: after the deployment) with the caller's multipart Content-Type
// and the key's credential; JSON endpoints are not uploads.
func TestBuildUpload(t *testing.T) {
	const ct = "multipart/form-data; boundary=abc"
	f := func(mod func(k *testKey), e adapters.Endpoint, model, wantURL string) {
		t.Helper()
		a, err := compile(key(mod))
		if err != nil {
			t.Fatal(err)
		}
		req := &fasthttp.Request{}
		if err := adapters.BuildUpload(a, e, req, &adapters.ChatInput{UpstreamModel: model}, []byte(ct)); err != nil {
			t.Fatal(err)
		}
		if got := req.URI().String(); got != wantURL {
			t.Errorf("%s: URL %s; want %s", e, got, wantURL)
		}
		if string(req.Header.Method()) != "POST" || string(req.Header.ContentType()) != ct || len(req.Header.Peek("Authorization"))+len(req.Header.Peek("api-key")) == 0 {
			t.Errorf("%s: %s %q auth %q", e, req.Header.Method(), req.Header.ContentType(), req.Header.Peek("Authorization"))
		}
	}
	f(nil, adapters.EndpointTranscriptions, "whisper-1", "https://api.openai.com/v1/audio/transcriptions")
	f(nil, adapters.EndpointTranslations, "whisper-1", "https://api.openai.com/v1/audio/translations")
	f(nil, adapters.EndpointImageEdits, "gpt-image-1", "https://api.openai.com/v1/images/edits")
	f(func(k *testKey) { k.azure, k.BaseURL = true, "https://r.openai.azure.com" }, adapters.EndpointTranscriptions, "wh",
		"https://r.openai.azure.com/openai/deployments/wh/audio/transcriptions?api-version="+adapters.DefaultAzureAPIVersion)

	a, _ := compile(key(nil))
	if err := adapters.BuildUpload(a, adapters.EndpointImages, &fasthttp.Request{}, &adapters.ChatInput{}, []byte(ct)); !errors.Is(err, adapters.ErrUnsupported) {
		t.Fatalf("images/generations as an upload: %v", err)
	}
}
