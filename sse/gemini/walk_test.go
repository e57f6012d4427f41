package gemini

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"gw/sse/rawjson"
)

// walkSeeds are single events for the paths walk takes: escaped and
// unicode-escaped text, keys spelled with escapes, duplicate keys (the last
// wins), nested and unknown members, parts that are not objects, missing
// fields and the error and blocked-prompt shapes.
var walkSeeds = []string{
	`{"candidates":[{"content":{"parts":[{"text":"plain"}],"role":"model"}}],"responseId":"r1"}`,
	`{"candidates":[{"content":{"parts":[{"text":"a\"b\\c\nd\u00e9\ud83d\ude00\ud800x"}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"t\u0065xt":"escaped key"},{"text":"x","th\u006fught":true}]}}],"r\u0065sponseId":"r\u0032"}`,
	`{"candidates":[{"content":{"parts":[{"text":"first"}]},"content":{"parts":[{"text":"second"}]}}],"candidates":[{"content":{"parts":[{"text":"last"}]},"finishReason":"STOP"}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"one"},"str",7,null,[{"text":"nested array"}],{"inlineData":{"mimeType":"image/png","data":"AAAA"}},{"text":"two","extra":{"deep":[{"text":"no"}]}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"thinking","thought":true},{"functionCall":{"name":"f","args":{"a":[1,{"b":"c"}]}},"thoughtSignature":"c2ln"},{"functionCall":{"name":"g","args":{},"id":"call_x"}}]},"finishReason":"STOP"}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":1}},{"functionCall":{"args":{}}},{"functionCall":[]},{"text":""},{"text":null}]}}]}`,
	`{"candidates":[]}`,
	`{"candidates":[7,{"content":{"parts":[{"text":"second candidate"}]}}]}`,
	`{"candidates":[{"content":[{"parts":[]}],"finishReason":"MAX_TOKENS"}]}`,
	`{"candidates":[{"content":{"parts":{"text":"not an array"}},"finishReason":"SAFETY"}]}`,
	`{"candidates":[{"finishReason":"FINISH_REASON_UNSPECIFIED"}]}`,
	`{"candidates":[{"finishReason":"\u0053TOP"}]}`,
	`{"candidates":{"content":{}},"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5}}`,
	`{"usageMetadata":{"promptTokenCount":1,"pr\u006fmptTokenCount":4,"thoughtsTokenCount":2,"cachedContentTokenCount":1,"toolUsePromptTokenCount":1,"totalTokenCount":1}}`,
	`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":3}}`,
	`{"error":{"code":429,"message":"slow \"down\"","status":"RESOURCE_EXHAUSTED"}}`,
	`{"error":"not an object","candidates":[{"content":{"parts":[{"text":"kept"}]}}]}`,
	`{}`,
	`{]`,
	`{"candidates":[{"content":{"parts":[{"text":"x"]}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"x"}]]}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"x"}]}]]}`,
	`{"candidates":[{"content":{"parts":[{"text":"x"}}}}]}`,
	`  {"candidates" : [ { "content" : { "parts" : [ { "text" : "spaced" } ] } } ] }  `,
}

var walkIDs = regexp.MustCompile(`call_[0-9a-f]+|chatcmpl-gw[0-9a-f]+|"created":[0-9]+`)

// checkWalk feeds events to one stream through Event and to another
// through eventGeneric and fails unless both write the same bytes and end
// in the same state; a JSON object must never need the fallback.
func checkWalk(t *testing.T, events ...[]byte) {
	t.Helper()
	fast, slow := AcquireToChatStream([]byte("m")), AcquireToChatStream([]byte("m"))
	defer ReleaseToChatStream(fast)
	defer ReleaseToChatStream(slow)
	var a, b []byte
	for _, ev := range events {
		d := trimWS(ev)
		if len(d) > 0 && d[0] == '{' && json.Valid(d) && !fast.walk(d) {
			t.Fatalf("walk rejects valid JSON %s", d)
		}
		var errA, errB error
		a, errA = fast.Event(a, nil, ev)
		if !slow.ended && len(d) > 0 {
			b, errB = slow.eventGeneric(b, d)
		}
		if (errA == nil) != (errB == nil) {
			t.Fatalf("event %s: errors differ: %v / %v", ev, errA, errB)
		}
	}
	a, b = fast.End(a), slow.End(b)
	a, b = walkIDs.ReplaceAll(a, nil), walkIDs.ReplaceAll(b, nil)
	if !bytes.Equal(a, b) {
		t.Fatalf("outputs differ for %q\nwalk:\n%s\ngeneric:\n%s", events, a, b)
	}
	if fast.started != slow.started || fast.finish != slow.finish || fast.nextTool != slow.nextTool || (fast.err == nil) != (slow.err == nil) {
		t.Fatalf("states differ for %q", events)
	}
}

func TestWalkMatchesGeneric(t *testing.T) {
	for _, s := range walkSeeds {
		checkWalk(t, []byte(s))
		checkWalk(t, []byte(s), []byte(s)) // a second event: the prefix is built, a finish may be sent
	}
	for _, f := range goldenFixtures {
		checkWalk(t, readEvents(t, f)...)
	}
}

// FuzzWalk: on any input the single-pass walk (with its fallback) and the
// generic reading write the same chunks; on a valid JSON object the walk
// never falls back.
func FuzzWalk(f *testing.F) {
	for _, s := range walkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, ev []byte) {
		checkWalk(t, ev, ev)
	})
}

// TestUsageMembers: the one-pass usageMetadata reading agrees with
// rawjson.ScanTop, escaped and duplicate keys and malformed input included.
func TestUsageMembers(t *testing.T) {
	for _, in := range []string{
		`{"promptTokenCount":1,"candidatesTokenCount":2,"totalTokenCount":3,"cachedContentTokenCount":4,"thoughtsTokenCount":5,"toolUsePromptTokenCount":6}`,
		`{"promptTokenCount":1,"promptTokenCount":7,"promptTokensDetails":[{"modality":"TEXT","tokenCount":15}]}`,
		`{"pr\u006fmptTokenCount":9,"x":{"promptTokenCount":8}}`,
		`{}`,
		`{"promptTokenCount":1,}`,
		`{"promptTokenCount" 1}`,
		`{"promptTokenCount":1} x`,
		`{"promptTokenCount":1]`,
		`{"promptTokenCount":[1}}`,
		`[1]`,
	} {
		var got, want [6][]byte
		ok := usageMembers([]byte(in), &got)
		wantOK := rawjson.ScanTop([]byte(in), usageMetaKeys, want[:]) == nil
		if ok != wantOK || (ok && !slices.EqualFunc(got[:], want[:], bytes.Equal)) {
			t.Errorf("%s: usageMembers = %q, %v; ScanTop %q, %v", in, got, ok, want, wantOK)
		}
	}
}
