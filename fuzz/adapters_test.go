package fuzz

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
	"gw/adapters/openai"
	"gw/sse/rawjson"
)

// Fuzz configuration bits of FuzzAdaptersBuildChat.
const (
	adOtherProvider = 1 << iota // provider is not openai: developer becomes system
	adFlatten                   // response.content_list_to_string
	adClamp                     // temperature_min 0.2, temperature_max 1.0
	adRenames                   // user -> end_user, max_completion_tokens -> mct
	adDefaults                  // service_tier, stream_options, max_completion_tokens
	adStream
	adForceUsage
	adAzure
)

var adRenameList = []openai.Rename{{From: "user", To: "end_user"}, {From: "max_completion_tokens", To: "mct"}}

var adDefaultList = []openai.BodyField{
	{Key: "service_tier", Value: []byte(`"default"`)},
	{Key: "stream_options", Value: []byte(`{"include_obfuscation":false}`)},
	{Key: "max_completion_tokens", Value: []byte(`10`)},
}

var adCache sync.Map // flags -> adapters.Adapter

// adTopNames: the top-level names an adapter acts on.
var adTopNames = []string{"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "stream_options",
	"user", "end_user", "mct", "service_tier"}

// adFold renames the members of m whose names equal one of names without
// case (strings.EqualFold: Unicode folding, as encoding/json) to that name.
func adFold(m map[string]any, names []string) {
	for k, v := range m {
		for _, n := range names {
			if k != n && strings.EqualFold(k, n) {
				delete(m, k)
				m[n] = v
			}
		}
	}
}

// adFoldBody folds the names an adapter acts on in a decoded chat body:
// the top level, each message, each content part, stream_options.
func adFoldBody(body map[string]any) {
	adFold(body, adTopNames)
	if msgs, ok := body["messages"].([]any); ok {
		for _, e := range msgs {
			if msg, ok := e.(map[string]any); ok {
				adFold(msg, []string{"role", "content", "thinking_blocks"})
				if parts, ok := msg["content"].([]any); ok {
					for _, p := range parts {
						if part, ok := p.(map[string]any); ok {
							adFold(part, []string{"type", "text"})
						}
					}
				}
			}
		}
	}
	if so, ok := body["stream_options"].(map[string]any); ok {
		adFold(so, []string{"include_usage", "include_obfuscation"})
	}
}

func adAdapter(t *testing.T, flags uint8) adapters.Adapter {
	if a, ok := adCache.Load(flags); ok {
		return a.(adapters.Adapter)
	}
	k := &adapters.KeyConfig{Name: "fuzz", Credential: adapters.NewSecret("sk")}
	c := &openai.Config{Provider: "openai"}
	if flags&adOtherProvider != 0 {
		c.Provider = "groq"
	}
	k.Body.ContentListToString = flags&adFlatten != 0
	if flags&adClamp != 0 {
		lo, hi := 0.2, 1.0
		k.Body.TemperatureMin, k.Body.TemperatureMax = &lo, &hi
	}
	if flags&adRenames != 0 {
		k.Body.ParamRenames = adRenameList
	}
	if flags&adDefaults != 0 {
		k.Body.DefaultBodyFields = adDefaultList
	}
	var a adapters.Adapter
	var err error
	if flags&adAzure != 0 {
		k.BaseURL = "https://r.openai.azure.com"
		a, err = openai.NewAzure(k, c, adapters.Options{})
	} else {
		a, err = openai.New(k, c, adapters.Options{})
	}
	if err != nil {
		t.Fatalf("cannot compile adapter: %v", err)
	}
	adCache.Store(flags, a)
	return a
}

// adReference applies the body rules to a decoded body, the slow and
// obvious way. It mirrors the documented rules of package openai.
func adReference(m map[string]any, flags uint8, model string) map[string]any {
	provider := "openai"
	if flags&adOtherProvider != 0 {
		provider = "groq"
	}
	azure := flags&adAzure != 0
	dev := azure || provider != "openai"
	maxCompletion := provider == "openai" || azure

	m["model"] = model
	if msgs, ok := m["messages"].([]any); ok {
		for _, e := range msgs {
			msg, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if dev && msg["role"] == "developer" {
				msg["role"] = "system"
			}
			if flags&adFlatten != 0 {
				if s, ok := adFlat(msg["content"]); ok {
					msg["content"] = s
				}
			}
		}
	}
	_, hasMax := m["max_tokens"]
	_, hasMCT := m["max_completion_tokens"]
	if maxCompletion && openai.IsReasoningModel(model) && hasMax && !hasMCT {
		m["max_completion_tokens"] = m["max_tokens"]
		delete(m, "max_tokens")
	}
	if flags&adRenames != 0 {
		for _, r := range adRenameList {
			if v, ok := m[r.From]; ok {
				m[r.To] = v
				delete(m, r.From)
			}
		}
	}
	if flags&adClamp != 0 {
		if n, ok := m["temperature"].(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err == nil {
				c := min(max(f, 0.2), 1.0)
				if c != f && !math.IsInf(c, 0) {
					m["temperature"] = json.Number(strconv.FormatFloat(c, 'g', -1, 64))
				}
			}
		}
	}
	if flags&adDefaults != 0 {
		for _, f := range adDefaultList {
			if _, ok := m[f.Key]; !ok {
				m[f.Key] = adDecode(f.Value)
			}
		}
	}
	if flags&adStream != 0 && flags&adForceUsage != 0 {
		if so, ok := m["stream_options"].(map[string]any); ok {
			so["include_usage"] = true
		} else {
			m["stream_options"] = map[string]any{"include_usage": true}
		}
	}
	return m
}

func adFlat(content any) (string, bool) {
	blocks, ok := content.([]any)
	if !ok || len(blocks) == 0 {
		return "", false
	}
	var sb strings.Builder
	for _, b := range blocks {
		blk, ok := b.(map[string]any)
		if !ok || blk["type"] != "text" {
			return "", false
		}
		s, ok := blk["text"].(string)
		if !ok {
			return "", false
		}
		sb.WriteString(s)
	}
	return sb.String(), true
}

func adDecode(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	return v
}

// adNormalize makes numbers comparable: json.Number values parse to float64
// when they fit (1, 1.0 and 1e0 are one number), and stay strings otherwise.
func adNormalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = adNormalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = adNormalize(e)
		}
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return f
		}
		return string(x)
	}
	return v
}

var adModels = []string{"gpt-4o", "o3-mini", "gpt-5", "llama-3.1-70b"}

func FuzzAdaptersBuildChat(f *testing.F) {
	seeds := []string{
		`{"model":"a","messages":[{"role":"developer","content":"x"},{"role":"user","content":[{"type":"text","text":"a\ud83d"},{"type":"text","text":"\ude00b"}]}],"max_tokens":5,"temperature":1.5,"stream":true}`,
		`{"model":"a","stream_options":{"include_usage":false,"x":1},"user":"u","max_completion_tokens":3}`,
		`{"max\u005ftokens":1,"mod\u0065l":"z","temperature":-1e400}`,
		`{"messages":[1,"x",null,{"role":"developer"},{"content":[]}],"messages":[{"role":"developer","role":"user"}]}`,
		`{ }`, `[]`, `{"a":`, `"x"`, `{"temperature":0.20000000000000001,"user":"a","end_user":"b"}`,
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i*37), adModels[i%len(adModels)])
		f.Add([]byte(s), uint8(0xff), "o1")
	}
	f.Fuzz(adCheckBuildChat)
}

// adCheckBuildChat is the FuzzAdaptersBuildChat property: no panic, the
// caller body untouched; for a valid JSON object, valid JSON out with
// model = the upstream model and every rule applied as adReference does.
func adCheckBuildChat(t *testing.T, body []byte, flags uint8, model string) {
	{
		if !utf8.ValidString(model) {
			model = "m"
		}
		if len(model)%5 < len(adModels) {
			model = adModels[len(model)%5]
		}
		a := adAdapter(t, flags)
		in := &adapters.ChatInput{Body: body, UpstreamModel: model,
			Stream: flags&adStream != 0, ForceUsage: flags&adForceUsage != 0}
		orig := append([]byte(nil), body...)
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		err := a.BuildChat(req, in)
		if !bytes.Equal(body, orig) {
			t.Fatalf("BuildChat wrote to the caller body")
		}
		if !rawjson.Valid(body) {
			return // no panic is all that is asked
		}
		want, isObject := adDecode(body).(map[string]any)
		if !isObject {
			if err == nil {
				t.Fatalf("non-object body %q accepted", body)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid object rejected: %v\n%s", err, body)
		}
		out := req.Body()
		if !json.Valid(out) {
			t.Fatalf("invalid output\nin:  %s\nout: %s", body, out)
		}
		got, _ := adDecode(out).(map[string]any)
		if got["model"] != model {
			t.Fatalf("model %v; want %q", got["model"], model)
		}
		// Names match without case, as a Go upstream reads them; a body
		// with two spellings of one name never reaches an adapter (the
		// read stage refuses it).
		if _, folded := rawjson.ValidNames(body); folded != nil {
			return
		}
		// Both sides are compared with the names the adapter acts on
		// folded to their spelling: a name it leaves alone keeps the
		// caller's ("mAX_tokens"), one it rewrites gets its own.
		if _, folded := rawjson.ValidNames(out); folded != nil {
			t.Fatalf("output spells %s twice\nin:  %s\nout: %s", folded, body, out)
		}
		adFoldBody(want)
		adFoldBody(got)
		want = adReference(want, flags, model)
		if g, w := adNormalize(got), adNormalize(want); !reflect.DeepEqual(g, w) {
			wj, _ := json.Marshal(w)
			t.Fatalf("flags %08b model %q\nin:   %s\nout:  %s\nwant: %s", flags, model, body, out, wj)
		}
	}
}

var adOwned = []string{"authorization", "content-type", "content-length", "host", "accept-encoding"}

func adLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// adForwardRef is the forwarding rule, written plainly.
func adForwardRef(pattern, name string) bool {
	p, n := adLower(strings.TrimSpace(pattern)), adLower(name)
	if headers.NeverRelayed(n) {
		return false
	}
	slot := headers.SlotOf(n) != 0
	owned := false
	for _, o := range adOwned {
		owned = owned || o == n
	}
	before, after, glob := strings.Cut(p, "*")
	if !glob {
		return p == n && (slot || !owned)
	}
	if slot || n == "traceparent" || n == "tracestate" || owned {
		return false
	}
	return len(n) >= len(before)+len(after) && strings.HasPrefix(n, before) && strings.HasSuffix(n, after)
}

func adToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func FuzzAdaptersHeaderMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"x-trace-*", "X-Trace-Id"}, {"*", "Authorization"}, {"authorization", "AUTHORIZATION"}, {"*", "x-gw-key"},
		{"x-*-id", "x-id"}, {"*", "traceparent"}, {"traceparent", "Traceparent"}, {"x-stainless-*", "X-Stainless-Os"},
		{"content-type", "content-type"}, {"*-key", "x-api-key"}, {"x-a*", "x-a"}, {"**", "x"}, {" X-Req ", "x-req"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		r, err := headers.Compile(&headers.Config{ForwardClientHeaders: []string{pattern}}, adOwned)
		p := strings.TrimSpace(pattern)
		if p == "" || strings.Count(p, "*") > 1 {
			if err == nil {
				t.Fatalf("pattern %q accepted", pattern)
			}
			return
		}
		if err != nil {
			t.Fatalf("pattern %q: %v", pattern, err)
		}
		got := r.Forward([]byte(name))
		if want := adForwardRef(pattern, name); got != want {
			t.Fatalf("pattern %q name %q: got %v; want %v", pattern, name, got, want)
		}
		// Apply relays exactly what Forward says (names fasthttp treats
		// specially are left to the unit tests).
		if !adToken(name) || strings.Contains(name, "*") {
			return
		}
		switch adLower(name) {
		case "host", "content-type", "content-length", "user-agent", "cookie", "connection", "transfer-encoding", "trailer":
			return
		}
		var client, dst fasthttp.RequestHeader
		client.Add(name, "v")
		var vars headers.Vars
		r.Apply(&dst, &client, &vars, 0, nil)
		if relayed := len(dst.Peek(name)) > 0; relayed != got {
			t.Fatalf("pattern %q name %q: Apply relayed %v, Forward %v", pattern, name, relayed, got)
		}
	})
}
