package fuzz

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/lakera"
	"gw/edge/guard/openaimod"
	"gw/edge/guard/presidio"
	"gw/edge/guard/remote"
)

// remoteGuardrail compiles one remote guardrail (its backend is never
// called: the targets feed answers to the parsers directly).
func remoteGuardrail(t testing.TB, entry string, ctor guard.Constructor) guard.Checker {
	t.Helper()
	r := resources.Load([]byte("_format_version: \"1\"\nguardrails:\n  - "+entry+"\n"), func(string) (string, bool) { return "", false })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	c, err := ctor(r.Resources.Guardrails[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkRemoteOutcome holds what the engine relies on from a parser: a
// malformed answer is a *remote.Error of class malformed whose text holds
// nothing from the answer; a block has a short Rule.
func checkRemoteOutcome(t *testing.T, answer []byte, v *guard.Verdict, err error) {
	t.Helper()
	if err != nil {
		var re *remote.Error
		if !errors.As(err, &re) || re.Class != remote.ClassMalformed {
			t.Fatalf("error %v is not a malformed *remote.Error", err)
		}
		if len(answer) >= 12 && contains(err.Error(), string(answer)) {
			t.Fatalf("error carries the answer: %v", err)
		}
		return
	}
	if v.Action == guard.Block && (v.Rule == "" || len(v.Rule) > 64 || !utf8.ValidString(v.Rule)) {
		t.Fatalf("block with rule %q", v.Rule)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func FuzzOpenAIModerationAnswer(f *testing.F) {
	flagged := remoteGuardrail(f, "{name: m, kind: openai_moderation, api_key: k, endpoint: 'http://127.0.0.1:1'}", openaimod.New).(*openaimod.Checker)
	scored := remoteGuardrail(f, "{name: m, kind: openai_moderation, api_key: k, endpoint: 'http://127.0.0.1:1', category_thresholds: {violence: 0.5, hate: 0.1}}", openaimod.New).(*openaimod.Checker)
	f.Add([]byte(`{"id":"modr-1","model":"omni-moderation-latest","results":[{"flagged":true,"categories":{"violence":true},"category_scores":{"violence":0.9}}]}`), uint8(1))
	f.Add([]byte(`{"results":[{"flagged":false,"categories":{},"category_scores":{"hate":0.05}},{"flagged":false}]}`), uint8(2))
	f.Add([]byte(`{"results":[{"flagged":true,"categories":{"\u0068ate":true}}]}`), uint8(1))
	f.Add([]byte(`{"results":[`), uint8(1))
	f.Fuzz(func(t *testing.T, answer []byte, n uint8) {
		for _, c := range []*openaimod.Checker{flagged, scored} {
			var v guard.Verdict
			err := c.ReadAnswer(answer, int(n%8), &v)
			checkRemoteOutcome(t, answer, &v, err)
			if err == nil && v.Action == guard.Rewrite {
				t.Fatal("openai_moderation rewrote")
			}
		}
	})
}

func FuzzLakeraAnswer(f *testing.F) {
	c := remoteGuardrail(f, "{name: l, kind: lakera, api_key: k, endpoint: 'http://127.0.0.1:1'}", lakera.New).(*lakera.Checker)
	f.Add([]byte(`{"flagged":true,"metadata":{"request_uuid":"x"},"breakdown":[{"detector_type":"prompt_attack","detected":true}]}`))
	f.Add([]byte(`{"flagged":false}`))
	f.Add([]byte(`{"flagged":true,"breakdown":[1,{"detected":true,"detector_type":"\ud800"}]}`))
	f.Fuzz(func(t *testing.T, answer []byte) {
		var v guard.Verdict
		err := c.ReadAnswer(answer, &v)
		checkRemoteOutcome(t, answer, &v, err)
		if err == nil && v.Action == guard.Rewrite {
			t.Fatal("lakera rewrote")
		}
	})
}

func FuzzPresidioAnalysis(f *testing.F) {
	cs := []*presidio.Checker{
		remoteGuardrail(f, "{name: p, kind: presidio, analyzer_url: 'http://127.0.0.1:1', anonymizer_url: 'http://127.0.0.1:1'}", presidio.New).(*presidio.Checker),
		remoteGuardrail(f, "{name: p, kind: presidio, analyzer_url: 'http://127.0.0.1:1', anonymizer_url: 'http://127.0.0.1:1', score_threshold: 0.5, entities: [EMAIL_ADDRESS, {name: US_SSN, action: block}]}", presidio.New).(*presidio.Checker),
	}
	f.Add([]byte(`[{"entity_type":"EMAIL_ADDRESS","start":3,"end":10,"score":1.0,"analysis_explanation":null,"recognition_metadata":{"recognizer_name":"x"}}]`))
	f.Add([]byte(`[{"entity_type":"US_SSN","start":0,"end":11,"score":0.85},{"entity_type":"PERSON","start":1,"end":2,"score":0.3}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"entity_type":"A\u0022","start":1e2,"end":-1,"score":"x"}]`))
	f.Fuzz(func(t *testing.T, answer []byte) {
		for _, c := range cs {
			var v guard.Verdict
			blocked, results, err := c.ReadAnalysis(answer, &v)
			checkRemoteOutcome(t, answer, &v, err)
			if err != nil || blocked {
				continue
			}
			// What goes to the anonymizer must be a valid JSON array.
			var rs []struct {
				EntityType string  `json:"entity_type"`
				Start      int64   `json:"start"`
				End        int64   `json:"end"`
				Score      float64 `json:"score"`
			}
			if e := json.Unmarshal(append(append([]byte("["), results...), ']'), &rs); e != nil {
				t.Fatalf("anonymizer results %s: %v", results, e)
			}
		}
	})
}

func FuzzRemoteChunks(f *testing.F) {
	f.Add([]byte("héllo wörld 日本語"), uint16(3))
	f.Add([]byte("\xff\xfe abc"), uint16(1))
	f.Fuzz(func(t *testing.T, text []byte, n uint16) {
		limit := int(n%64) + 1
		pieces := remote.Chunks(nil, text, limit)
		var joined []byte
		for i, p := range pieces {
			c := utf8.RuneCount(p)
			if c > limit || c == 0 || (i < len(pieces)-1 && c != limit) {
				t.Fatalf("piece %d has %d characters (limit %d)", i, c, limit)
			}
			if utf8.Valid(text) && !utf8.Valid(p) {
				t.Fatalf("piece %d splits a character", i)
			}
			joined = append(joined, p...)
		}
		if string(joined) != string(text) {
			t.Fatal("pieces do not rejoin to the text")
		}
	})
}
