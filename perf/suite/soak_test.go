package suite

import (
	"io"
	"strings"
	"testing"

	"gw/admin/resources"
)

// TestSoakFile loads scenario 7's resources with gw's loader: the alias exists and its
// key forwards the mock's knob headers, without which every answer would have the
// mock's default 5 chunks and the soak would report them all broken.
func TestSoakFile(t *testing.T) {
	env := map[string]string{"PERF_UPSTREAM_KEY": "sk-perf", "PERF_CALLER_KEY": "perf-caller", "PERF_MOCK": "http://127.0.0.1:1"}
	res := resources.Load([]byte(soakFile), func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if len(res.Resources.Models) != 1 || res.Resources.Models[0].DisplayName != "soak" {
		t.Fatalf("models: %+v", res.Resources.Models)
	}
	if pk := res.Resources.ProviderKeys; len(pk) != 1 || strings.Join(pk[0].Request.ForwardClientHeaders, ",") != "x-mock-*" {
		t.Fatalf("the soak's key does not forward x-mock-* headers: %+v", pk)
	}
}

// TestSoakPanicLines: lines are counted whole however the writes split them, the
// unterminated last one included, and everything passes through.
func TestSoakPanicLines(t *testing.T) {
	var out strings.Builder
	p := &panicLines{w: &out}
	text := "{\"level\":\"INFO\",\"msg\":\"ok\"}\nerror: pan" + "ic while writing body stream: boom\n" +
		"{\"msg\":\"access\",\"status\":200}\nsecond panic, no newline"
	for i := 0; i < len(text); i += 7 {
		io.WriteString(p, text[i:min(i+7, len(text))])
	}
	n, first := p.result()
	if n != 2 || first != "error: panic while writing body stream: boom" || out.String() != text {
		t.Fatalf("%d %q; passed through %q", n, first, out.String())
	}
}
