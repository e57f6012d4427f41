package suite

import (
	"testing"

	"gw/admin/resources"
	"gw/perf/load"
)

// TestBasicFile loads the suite's resources file with gw's loader: the keys and models
// the scenarios name exist, and scenario 4's Anthropic key speaks the messages protocol
// to the mock's stream knobs.
func TestBasicFile(t *testing.T) {
	env := map[string]string{"PERF_UPSTREAM_KEY": "sk-perf", "PERF_CALLER_KEY": "perf-caller", "PERF_MOCK": "http://127.0.0.1:1"}
	res := resources.Load([]byte(BasicFile("/knobs/chunks=200,chunk_delay=10ms")), func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	keys := map[string]*resources.ProviderKey{}
	for _, pk := range res.Resources.ProviderKeys {
		keys[pk.DisplayName] = pk
	}
	a := keys["mock-stream-anthropic"]
	if a == nil || a.Adapter != resources.AdapterAnthropic || a.APIBase != "http://127.0.0.1:1/knobs/chunks=200,chunk_delay=10ms/v1" {
		t.Fatalf("anthropic key %+v; want adapter anthropic on the mock's stream knobs", a)
	}
	if k := keys["mock-stream"]; k == nil || k.Adapter != resources.AdapterOpenAI {
		t.Fatalf("stream key %+v; want adapter openai", k)
	}
	if n := len(res.Resources.GuardrailAttachments); n != 4 {
		t.Fatalf("%d guardrail attachments; want keyword and pii on both guarded aliases", n)
	}
	models := map[string]bool{}
	for _, m := range res.Resources.Models {
		models[m.DisplayName] = true
	}
	for _, m := range []string{"gpt", "gpt-stream", "claude-stream", "gpt-guarded", "gpt-stream-guarded"} {
		if !models[m] {
			t.Fatalf("model %s missing from:\n%s", m, BasicFile(""))
		}
	}
}

func TestStreamSpan(t *testing.T) {
	// 10 streams of 205 events (204 gaps) with a mean gap of 10 ms: 2.04 s each.
	st := &load.StreamResult{Streams: 10, ChunkGapUS: load.Percentiles{Count: 2040, Mean: 10_000}}
	if got := streamSpanUS(st); got != 2_040_000 {
		t.Fatalf("span %g µs; want 2040000", got)
	}
}

// TestExportersFile: scenario 8's gw-exporters file loads with both
// exporters pointed at the sink.
func TestExportersFile(t *testing.T) {
	env := map[string]string{"PERF_UPSTREAM_KEY": "sk-perf", "PERF_CALLER_KEY": "perf-caller", "PERF_MOCK": "http://127.0.0.1:1"}
	res := resources.Load([]byte(BasicFile("")+exportersBlock("http://127.0.0.1:2")), func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if n := len(res.Resources.ObservabilityExporters); n != 2 {
		t.Fatalf("%d exporters; want otlp_http and object_store", n)
	}
}
