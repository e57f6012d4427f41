package usage_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/usagetest"
	"gw/sse/rawjson"
)

func sampleRecords() []usage.Record {
	at := time.Date(2026, 11, 25, 17, 5, 46, 123456789, time.FixedZone("x", 3600))
	id := usage.NewRequestID()
	tags := &resources.TelemetryTags{Kind: "catalog", Featured: true, BrandedProvider: "openai", PKLabel: "prod"}
	return []usage.Record{
		{OccurredAt: at, RequestID: id, Attempt: 1, AttemptKind: usage.AttemptFailed, StatusCode: 503, ErrorClass: "upstream_status",
			ErrorMessage: "upstream returned 503 Service Unavailable", APIKeyID: "k-1", APIKeyName: "caller", Model: "grp",
			TargetModel: "a", UpstreamModel: "m-a", Provider: "openai", ProviderKey: "bad", ProviderKeyID: "pk-1",
			InboundProtocol: "chat_completions", Operation: "chat.completions", CacheStatus: usage.CacheNone},
		{OccurredAt: at.Add(time.Second), RequestID: id, Attempt: 2, AttemptKind: usage.AttemptFinal, StatusCode: 200,
			APIKeyID: "k-1", APIKeyName: "caller \"quoted\"", TeamID: "t1", UserID: "u1", UserName: "Zoë",
			Model: "grp", TargetModel: "b", UpstreamModel: "m-b", Provider: "openai", ProviderKey: "good", ProviderKeyID: "pk-2", Tags: tags,
			InboundProtocol: "chat_completions", Operation: "chat.completions", CacheStatus: usage.CacheMiss, Stream: true,
			PromptTokens: 10, CompletionTokens: 20, ReasoningTokens: 5, CachedPromptTokens: 2, TotalTokens: 35, CostUSD: 0.0625,
			Latency: 1500 * time.Millisecond, TTFT: 120 * time.Millisecond, UpstreamLatency: 1400 * time.Millisecond, UpstreamTTFT: 100 * time.Millisecond,
			RequestBodyBytes: 321, ResponseBodyBytes: 4567,
			AppliedGuardrails:       []string{"pii", "kw"},
			GuardrailEnforcedHits:   []usage.GuardrailHit{{Guardrail: "pii", Action: "mask"}},
			GuardrailMonitorHits:    []usage.GuardrailHit{{Guardrail: "kw", Action: "would_block"}},
			GuardrailBypassedReason: "output_buffer_exceeded"},
		{OccurredAt: at, RequestID: usage.NewRequestID(), AttemptKind: usage.AttemptFinal, StatusCode: 422, ErrorClass: "guardrail_unavailable",
			ErrorMessage: "x", Model: "m", InboundProtocol: "messages", Operation: "messages", CacheStatus: usage.CacheNone,
			GuardrailBlockedFailClosed: true},
	}
}

// TestRecordJSONMatchesSchema: real encoded records validate against
// docs/usage-event.schema.json, and the exact rules of the fields hold.
func TestRecordJSONMatchesSchema(t *testing.T) {
	recs := sampleRecords()
	data := usage.AppendNDJSON(nil, recs)
	if n := usagetest.ValidateNDJSON(t, data); n != len(recs) {
		t.Fatalf("validated %d records; want %d", n, len(recs))
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var failed, final, blocked map[string]any
	for i, v := range []*map[string]any{&failed, &final, &blocked} {
		if err := json.Unmarshal([]byte(lines[i]), v); err != nil {
			t.Fatal(err)
		}
	}
	f := func(m map[string]any, key string, want any) {
		t.Helper()
		if got := m[key]; got != want {
			t.Fatalf("%s: got %#v; want %#v", key, got, want)
		}
	}
	f(failed, "occurred_at", "2026-11-25T16:05:46.123Z") // UTC, milliseconds
	f(failed, "total_tokens", nil)                       // absent → null
	f(failed, "telemetry_tags", nil)
	f(failed, "team_id", nil)
	f(failed, "ttft_ms", nil)
	f(failed, "event_id", recs[0].RequestID.String()+".1")
	f(final, "event_id", recs[0].RequestID.String()+".2")
	f(final, "request_id", failed["request_id"])
	f(final, "total_tokens", 35.0)
	f(final, "user_name", "Zoë")
	f(final, "api_key_name", "caller \"quoted\"")
	f(final, "ttft_ms", 120.0)
	f(final, "upstream_latency_ms", 1400.0)
	f(final, "cost_usd", 0.0625)
	f(final, "guardrail_bypassed_reason", "output_buffer_exceeded")
	tags := final["telemetry_tags"].(map[string]any)
	if tags["kind"] != "catalog" || tags["featured"] != true || tags["pk_label"] != "prod" || tags["byo_label"] != nil {
		t.Fatalf("telemetry_tags %v", tags)
	}
	f(blocked, "guardrail_blocked_fail_closed", true)
	f(blocked, "attempt", 0.0)
}

func TestCost(t *testing.T) {
	f := func(p, c, r, tot int64, want float64) {
		t.Helper()
		if got := usage.Cost(p, c, r, tot, 1, 2); got != want {
			t.Fatalf("Cost(%d,%d,%d,%d) = %v; want %v", p, c, r, tot, got, want)
		}
	}
	f(1000, 1000, 0, 2000, 3)   // no reasoning
	f(1000, 1000, 500, 2000, 3) // reasoning inside completion (total = p + c): billed once
	f(1000, 1000, 500, 2500, 4) // reasoning outside completion (p + c + r == total): billed in full too
	f(1000, 1000, 500, 0, 3)    // no total reported: completion only
	f(0, 0, 0, 0, 0)
}

func TestRequestID(t *testing.T) {
	a, b := usage.NewRequestID(), usage.NewRequestID()
	if a == b {
		t.Fatal("two equal request IDs")
	}
	s := a.String()
	if len(s) != 36 || s[14] != '4' || !strings.ContainsRune("89ab", rune(s[19])) {
		t.Fatalf("not a UUIDv4: %s", s)
	}
	// Counter-derived: unique in the process, from many goroutines at once,
	// and every one UUIDv4 shaped; the leading bytes vary (trace IDs do not
	// share a prefix; the trailing ones are the per-process salt).
	const perG, gs = 50000, 4
	ch := make(chan []usage.RequestID, gs)
	for g := 0; g < gs; g++ {
		go func() {
			ids := make([]usage.RequestID, perG)
			for i := range ids {
				ids[i] = usage.NewRequestID()
			}
			ch <- ids
		}()
	}
	seen := make(map[usage.RequestID]bool, perG*gs)
	firsts := map[[4]byte]bool{}
	for g := 0; g < gs; g++ {
		for _, id := range <-ch {
			if seen[id] {
				t.Fatalf("duplicate request ID %s", id)
			}
			seen[id] = true
			if id[6]>>4 != 4 || id[8]>>6 != 2 {
				t.Fatalf("not a UUIDv4: %s", id)
			}
			firsts[[4]byte(id[:4])] = true
		}
	}
	if len(firsts) < perG*gs/2 {
		t.Fatalf("only %d distinct leading 4 bytes in %d IDs", len(firsts), perG*gs)
	}
}

func BenchmarkNewRequestID(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = usage.NewRequestID()
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := func(v string, want time.Duration) {
		t.Helper()
		if got := usage.ParseRetryAfter(v, now); got != want {
			t.Fatalf("ParseRetryAfter(%q) = %v; want %v", v, got, want)
		}
	}
	f("", 0)
	f("3", 3*time.Second)
	f(" 7 ", 7*time.Second)
	f("31", usage.RetryAfterMax) // capped
	f("99999999999999999999", 0) // overflow: not a number we accept
	f("-1", 0)
	f("1.5", 0)
	f("Thu, 01 Jan 2026 00:00:10 GMT", 10*time.Second)
	f("Thu, 01 Jan 2026 00:05:00 GMT", usage.RetryAfterMax)
	f("Wed, 31 Dec 2025 23:00:00 GMT", 0) // past
	f("soon", 0)
}

func TestErrorSnippet(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := usage.ErrorSnippet([]byte(in)); got != want {
			t.Fatalf("ErrorSnippet(%q) = %q; want %q", in, got, want)
		}
	}
	f(`{"error":"bad"}`+"\nmore", `{"error":"bad"}`)
	f("caf\xc3\xa9", "caf??")
	f(strings.Repeat("a", 300), strings.Repeat("a", 200))
}

// TestAppendMS: the integer formatter writes exactly what the float one
// did (µs/1000 with three decimals), over edge values and a sweep.
func TestAppendMS(t *testing.T) {
	check := func(d time.Duration) {
		t.Helper()
		want := strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64)
		if got := string(usage.AppendMS(nil, d)); got != want {
			t.Fatalf("AppendMS(%v) = %s; want %s", d, got, want)
		}
	}
	for _, d := range []time.Duration{0, 1, 999, time.Microsecond, 1001 * time.Microsecond, 120 * time.Millisecond,
		1500 * time.Millisecond, -time.Millisecond, -1500 * time.Microsecond, 24 * time.Hour, 1<<53 - 1, -(1<<53 - 1)} {
		check(d)
	}
	for us := int64(0); us < 200000; us += 7 {
		check(time.Duration(us) * time.Microsecond)
	}
}

// TestAppendTime: occurred_at's formatter writes what
// AppendFormat(TimeLayout) does, in any zone, across years and
// sub-millisecond parts (truncated, not rounded).
func TestAppendTime(t *testing.T) {
	zone := time.FixedZone("x", -(9*3600 + 30*60))
	for _, tm := range []time.Time{{}, time.Unix(0, 0), time.Date(2026, 11, 25, 17, 5, 46, 999999999, zone),
		time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 2, 3, 4, 5, 6, 7e6, time.UTC)} {
		if got, want := string(usage.AppendTime(nil, tm)), tm.UTC().Format(usage.TimeLayout); got != want {
			t.Fatalf("AppendTime(%v) = %s; want %s", tm, got, want)
		}
	}
	tm := time.Date(2020, 1, 1, 0, 0, 0, 0, zone)
	for i := 0; i < 20000; i++ {
		tm = tm.Add(time.Duration(i)*time.Hour + 7777777*time.Nanosecond)
		if got, want := string(usage.AppendTime(nil, tm)), tm.UTC().Format(usage.TimeLayout); got != want {
			t.Fatalf("AppendTime(%v) = %s; want %s", tm, got, want)
		}
	}
}

// TestAppendInt: the integer formatter writes what strconv does, across
// the lengths it writes itself and the ones it leaves to strconv.
func TestAppendInt(t *testing.T) {
	vals := []int64{0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10000, 999999999, 1e9, 1e9 + 1, -1, -9, -10, -1000, 1<<63 - 1, -1 << 63}
	for v := int64(0); v < 20000; v += 3 {
		vals = append(vals, v)
	}
	for _, v := range vals {
		if got, want := string(usage.AppendInt([]byte("x"), v)), "x"+strconv.FormatInt(v, 10); got != want {
			t.Fatalf("AppendInt(%d) = %s; want %s", v, got, want)
		}
	}
}

// TestAppendStr: a string field is the key and the value as
// rawjson.AppendQuote quotes it, for values of every length up to two
// words with a byte that needs escaping (or that does not) at each place.
func TestAppendStr(t *testing.T) {
	for _, c := range []struct {
		b     byte
		plain bool
	}{{'a', true}, {'~', true}, {' ', true}, {0x7f, true}, {0, false}, {0x1f, false}, {'"', false}, {'\\', false}, {0x80, false}, {0xff, false}} {
		for n := 0; n <= 17; n++ {
			for at := 0; at < max(n, 1); at++ {
				v := []byte(strings.Repeat("m", n))
				if n > 0 {
					v[at] = c.b
				}
				got := string(usage.AppendStr([]byte("{"), `"k":"`, string(v)))
				want := `{"k":` + string(rawjson.AppendQuote(nil, string(v)))
				if got != want {
					t.Fatalf("%q: got %q; want %q", v, got, want)
				}
			}
		}
	}
}

// TestRequestIDString: the canonical form, digit by digit.
func TestRequestIDString(t *testing.T) {
	const hex = "0123456789abcdef"
	for i := 0; i < 1000; i++ {
		id := usage.NewRequestID()
		if i < 16 {
			for k := range id {
				id[k] = byte(i * 17) // every digit in every place
			}
		}
		var want []byte
		for k, b := range id {
			if k == 4 || k == 6 || k == 8 || k == 10 {
				want = append(want, '-')
			}
			want = append(want, hex[b>>4], hex[b&15])
		}
		if got := id.AppendString([]byte("x")); string(got) != "x"+string(want) {
			t.Fatalf("%x: got %s; want %s", id[:], got, want)
		}
	}
}
