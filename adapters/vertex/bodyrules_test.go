package vertex

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/adapters/openai"
)

// newRules compiles an adapter of provider with body rules c.
func newRules(t *testing.T, provider string, c bodyrules.Config) *Adapter {
	t.Helper()
	k := adapters.KeyConfig{Name: "v", Credential: adapters.NewSecret(testDoc(t)), Body: c}
	a, err := New(&k, &openai.Config{Provider: provider}, adapters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFetch{life: time.Hour}
	a.tok = newTokens(f.fetch)
	return a
}

// TestBodyRules: on Gemini keys the temperature bounds reach
// generationConfig and renames and defaults act on the Gemini body; on
// Claude keys every rule acts on the Messages body, converted or native.
func TestBodyRules(t *testing.T) {
	half := 0.5
	c := bodyrules.Config{TemperatureMax: &half,
		ParamRenames:        []bodyrules.Rename{{From: "toolConfig", To: "tool_config"}, {From: "metadata", To: "meta"}},
		DefaultBodyFields:   []bodyrules.Field{{Key: "safetySettings", Value: []byte(`[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_NONE"}]`)}, {Key: "anthropic_version", Value: []byte(`"x"`)}},
		ContentListToString: true}
	g := newRules(t, "google", c)
	body := string(build(t, g, `{"messages":[{"role":"user","content":"q"}],"temperature":1.5,"tool_choice":"none"}`, false).Body())
	if body != `{"contents":[{"role":"user","parts":[{"text":"q"}]}],"tool_config":{"functionCallingConfig":{"mode":"NONE"}},"generationConfig":{"temperature":0.5},"safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_NONE"}]}` {
		t.Fatalf("gemini body %s", body)
	}
	// A caller's own safety_settings win over the key's default.
	body = string(build(t, g, `{"messages":[{"role":"user","content":"q"}],"safety_settings":[]}`, false).Body())
	if !strings.HasSuffix(body, `"safetySettings":[]}`) {
		t.Fatalf("gemini body %s", body)
	}

	cl := newRules(t, "anthropic", c)
	body = string(build(t, cl, `{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"temperature":0.9,"max_tokens":9}`, false).Body())
	if !strings.Contains(body, `"temperature":0.5`) || !strings.Contains(body, `"anthropic_version":"vertex-2023-10-16"`) || strings.Contains(body, `"x"`) ||
		!strings.Contains(body, `"safetySettings"`) || !strings.Contains(body, `"content":"a`) {
		t.Fatalf("claude body %s", body)
	}
	native := fasthttp.AcquireRequest()
	in := &adapters.ChatInput{Body: []byte(`{"model":"alias","max_tokens":5,"temperature":1,"metadata":{"user_id":"u"},"messages":[{"role":"user","content":"Hi"}]}`), UpstreamModel: "m@1"}
	if err := cl.BuildNative(native, in, adapters.SurfaceMessages); err != nil {
		t.Fatal(err)
	}
	body = string(native.Body())
	if !strings.Contains(body, `"temperature":0.5`) || !strings.Contains(body, `"meta":{"user_id":"u"}`) || strings.Contains(body, `"model"`) {
		t.Fatalf("native body %s", body)
	}
}
