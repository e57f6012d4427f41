package vars

import (
	"mime/multipart"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func bodyCtx(ct, body string) *fasthttp.RequestCtx {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/")
	ctx.Request.Header.SetContentType(ct)
	ctx.Request.SetBodyString(body)
	return ctx
}

const chatBody = `{"model":{"name":"gpt","version":"4o"},"n":2,"stream":true,"messages":[
	{"role":"system","content":"be brief"},
	{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"x"}}]}]}`

func TestPostArgJSON(t *testing.T) {
	ctx := bodyCtx("application/json; charset=utf-8", chatBody)
	for _, tc := range []struct {
		name, want string
		defined    bool
	}{
		{"post_arg.model.version", "4o", true},
		{"post_arg.model", `{"name":"gpt","version":"4o"}`, true},
		{"post_arg.n", "2", true},
		{"post_arg.stream", "true", true},
		{"post_arg.messages[0].role", "system", true},
		{"post_arg.messages[1].content[1].type", "image_url", true},
		{"post_arg.messages[2].role", "", false},
		{"post_arg.messages[*].role", `["system","user"]`, true},
		{"post_arg.messages[*].content[*].type", `["text","image_url"]`, true},
		{"post_arg.messages[*].nope", "", false},
		{"post_arg.nope", "", false},
		// Names match exactly, as APISIX reads them.
		{"post_arg.MODEL", "", false},
		{"post_arg.model.Version", "", false},
	} {
		v, known := Compile(tc.name)
		if !known {
			t.Fatalf("%s: unknown", tc.name)
		}
		got, ok := v.Append(nil, ctx, nil)
		if string(got) != tc.want || ok != tc.defined {
			t.Errorf("%s: got %q %v; want %q %v", tc.name, got, ok, tc.want, tc.defined)
		}
	}
	v, _ := Compile("post_arg.messages[*].content[*].type")
	var seen []string
	hit, _ := v.Each(ctx, nil, func(val []byte) bool { seen = append(seen, string(val)); return string(val) == "image_url" })
	if !hit || strings.Join(seen, ",") != "text,image_url" {
		t.Errorf("Each: hit %v seen %v", hit, seen)
	}
	// Not JSON: no list.
	if hit, _ := v.Each(bodyCtx("text/plain", chatBody), nil, func([]byte) bool { return true }); hit {
		t.Error("Each on a text/plain body found a value")
	}
}

func TestPostArgForms(t *testing.T) {
	ctx := bodyCtx("application/x-www-form-urlencoded", "model=gpt-4o&x=1")
	for name, want := range map[string]string{"post_arg.model": "gpt-4o", "post_arg_model": "gpt-4o", "post_arg.x": "1"} {
		v, _ := Compile(name)
		if got, ok := v.Append(nil, ctx, nil); !ok || string(got) != want {
			t.Errorf("%s: got %q %v; want %q", name, got, ok, want)
		}
	}
	var sb strings.Builder
	w := multipart.NewWriter(&sb)
	_ = w.WriteField("model", "whisper-1")
	_ = w.Close()
	ctx = bodyCtx(w.FormDataContentType(), sb.String())
	v, _ := Compile("post_arg.model")
	if got, ok := v.Append(nil, ctx, nil); !ok || string(got) != "whisper-1" {
		t.Errorf("multipart: got %q %v", got, ok)
	}
	v, _ = Compile("post_arg.model.version")
	if _, ok := v.Append(nil, ctx, nil); ok {
		t.Error("a nested path on a form is defined; want undefined")
	}
}

func TestParsePath(t *testing.T) {
	for _, bad := range []string{"", ".a", "a..b", "a[", "a[x]", "a[-1]", "a]", "[0]"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("%q: parsed; want an error", bad)
		}
		if _, known := Compile("post_arg." + bad); known {
			t.Errorf("post_arg.%s: known; want unknown", bad)
		}
	}
	p, err := ParsePath("a.b[2][*].c")
	if err != nil || len(p) != 5 || !p[3].isIdx || p[3].index != wildcard || p[2].index != 2 {
		t.Fatalf("got %+v %v", p, err)
	}
}

func BenchmarkPostArgJSON(b *testing.B) {
	ctx := bodyCtx("application/json", chatBody)
	v, _ := Compile("post_arg.model.version")
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf, _ = v.Append(buf[:0], ctx, nil)
	}
}

func BenchmarkPostArgWildcardHas(b *testing.B) {
	ctx := bodyCtx("application/json", chatBody)
	v, _ := Compile("post_arg.messages[*].content[*].type")
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, buf = v.Each(ctx, buf, func(val []byte) bool { return string(val) == "image_url" })
	}
}
