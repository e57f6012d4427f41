package snapshot

import (
	"strings"
	"testing"

	"gw/adapters"
	"gw/adapters/upstream"
	"gw/admin/resources"
)

const endpointsSrc = `_format_version: "1"
provider_keys:
  - {display_name: oa, provider: openai, api_key: "${OPENAI_KEY}"}
  - {display_name: co, provider: cohere, api_key: "${OPENAI_KEY}", api_base: "http://h/v1"}
  - {display_name: an, provider: anthropic, api_key: "${OPENAI_KEY}"}
models:
  - {display_name: chat, provider: openai, model_name: m, provider_key: oa}
  - {display_name: emb, provider: openai, model_name: e, provider_key: oa, embedding: {dimensions: 8}}
  - {display_name: emb-an, provider: anthropic, model_name: e, provider_key: an, embedding: {dimensions: 8}}
  - {display_name: rr, provider: cohere, model_name: r, provider_key: co}
  - {display_name: emb-group, routing: {targets: [{model: emb}, {model: emb-an}]}}
  - {display_name: chat-group, routing: {targets: [{model: chat}, {model: rr}]}}
`

// TestCompileEndpoints: per model, the endpoints its adapter builds
// (embeddings only with an embedding block, and then nothing else); a
// group serves what all its targets serve; a group mixing embedding and
// other models does not load.
func TestCompileEndpoints(t *testing.T) {
	opt := DefaultOptions()
	opt.Pool = upstream.NewPool(upstream.Options{})
	s := compile(t, endpointsSrc, opt)
	caps := func(es ...adapters.Endpoint) adapters.Caps {
		var c adapters.Caps
		for _, e := range es {
			c = c.With(e)
		}
		return c
	}
	uploads := []adapters.Endpoint{adapters.EndpointTranscriptions, adapters.EndpointTranslations, adapters.EndpointImageEdits}
	for alias, want := range map[string]adapters.Caps{
		"chat":       caps(append(uploads, adapters.EndpointCompletions, adapters.EndpointImages, adapters.EndpointSpeech, adapters.EndpointVideos)...),
		"emb":        caps(adapters.EndpointEmbeddings),
		"emb-an":     0,
		"rr":         caps(append(uploads, adapters.EndpointCompletions, adapters.EndpointRerank, adapters.EndpointImages, adapters.EndpointSpeech, adapters.EndpointVideos)...),
		"emb-group":  0, // emb-an has no embeddings: the group does not serve them
		"chat-group": caps(append(uploads, adapters.EndpointCompletions, adapters.EndpointImages, adapters.EndpointSpeech, adapters.EndpointVideos)...),
	} {
		if got := s.Plans[alias].Endpoints; got != want {
			t.Errorf("%s: endpoints %b; want %b", alias, got, want)
		}
	}

	mixed := endpointsSrc + "  - {display_name: mixed, routing: {targets: [{model: emb}, {model: chat}]}}\n"
	r := resources.Load([]byte(mixed), testEnv)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	_, err := Compile(r.Resources, opt)
	if err == nil || !strings.Contains(err.Error(), "models[6] (display_name=mixed): routing.targets[1].model") {
		t.Fatalf("mixed group: %v", err)
	}
}
