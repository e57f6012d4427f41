package snapshot

import (
	"testing"
	"time"
)

func TestCompileEnsemble(t *testing.T) {
	s := compile(t, `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: "${OPENAI_KEY}"}
models:
  - {display_name: a, provider: openai, model_name: gpt-4o, provider_key: oa}
  - {display_name: b, provider: openai, model_name: gpt-4o-mini, provider_key: oa}
  - display_name: panel
    ensemble:
      panel: [{model: a, temperature: 0.25, seed: -3}, {model: b}]
      judge: {model: b, synthesis_prompt: "merge"}
      min_responses: 7
      timeout_ms: 1500
  - display_name: grp
    routing: {targets: [{model: a}]}
`, DefaultOptions())
	p := s.Plans["panel"]
	ep := p.Ensemble
	if ep == nil || !p.Servable || len(ep.Members) != 2 {
		t.Fatalf("panel: %+v", p)
	}
	if ep.Members[0].Plan != s.Plans["a"] || string(ep.Members[0].Temperature) != "0.25" || string(ep.Members[0].Seed) != "-3" {
		t.Fatalf("member 0: %+v", ep.Members[0])
	}
	if ep.Members[1].Plan != s.Plans["b"] || ep.Members[1].Temperature != nil || ep.Members[1].Seed != nil {
		t.Fatalf("member 1: %+v", ep.Members[1])
	}
	if ep.Judge != s.Plans["b"] || ep.Prompt != "merge" || ep.MinResponses != 2 || ep.Timeout != 1500*time.Millisecond {
		t.Fatalf("ensemble: %+v", ep)
	}
	if s.Plans["grp"].Ensemble != nil || s.Plans["a"].Ensemble != nil {
		t.Fatal("only ensemble plans carry an ensemble")
	}
	for _, u := range s.Unenforced {
		if u.Entry == "display_name=panel" {
			t.Fatalf("a servable ensemble is reported unenforced: %v", u)
		}
	}
}
