package embedconv

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"gw/adapters"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		body  string
		texts int
		dims  string
		b64   bool
		typ   string
		bad   bool
	}{
		{body: `{"input":"a"}`, texts: 1},
		{body: `{"input":["a","b\"c"],"dimensions":256,"encoding_format":"base64","input_type":"search_query"}`, texts: 2, dims: "256", b64: true, typ: `"search_query"`},
		{body: `{"input":["a"],"task_type":"RETRIEVAL_QUERY","encoding_format":"float"}`, texts: 1, typ: `"RETRIEVAL_QUERY"`},
		{body: `{"input":[1,2,3]}`, bad: true},
		{body: `{"input":[[1,2],[3]]}`, bad: true},
		{body: `{"input":["a",[1]]}`, bad: true},
		{body: `{"input":{}}`, bad: true},
	} {
		r, err := ParseRequest([]byte(tc.body), nil)
		if tc.bad {
			if !errors.As(err, new(adapters.RequestError)) {
				t.Fatalf("%s: err %v; want a RequestError", tc.body, err)
			}
			continue
		}
		if err != nil || len(r.Texts) != tc.texts || string(r.Dimensions) != tc.dims || r.Base64 != tc.b64 || string(r.InputType) != tc.typ {
			t.Fatalf("%s: %+v %v", tc.body, r, err)
		}
	}
	if _, err := ParseRequest([]byte(`[]`), nil); !errors.Is(err, adapters.ErrBody) {
		t.Fatal(err)
	}
}

func TestList(t *testing.T) {
	l := Begin([]byte("x"), false)
	if err := l.Add([]byte(`[0.5,-1]`)); err != nil {
		t.Fatal(err)
	}
	if err := l.Add([]byte(`[2]`)); err != nil {
		t.Fatal(err)
	}
	if got := string(l.End(7)); got != `x{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-1]},{"object":"embedding","index":1,"embedding":[2]}],"model":"","usage":{"prompt_tokens":7,"total_tokens":7}}` {
		t.Fatal(got)
	}
	l = Begin(nil, true)
	if err := l.Add([]byte(`[0.25, -3e2]`)); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(l.End(-1), &out); err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(out.Data[0].Embedding)
	if len(raw) != 8 || math.Float32frombits(binary.LittleEndian.Uint32(raw)) != 0.25 || math.Float32frombits(binary.LittleEndian.Uint32(raw[4:])) != -300 {
		t.Fatalf("base64 %x", raw)
	}
	for _, bad := range []string{`{}`, `["a"]`, `[1,`} {
		l := Begin(nil, true)
		if err := l.Add([]byte(bad)); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
}

func TestRerankAnswer(t *testing.T) {
	r, err := ParseRerank([]byte(`{"query":"q","documents":["a",{"text":"b","id":7}],"top_n":2,"return_documents":true}`))
	if err != nil || string(r.TopN) != "2" || !r.ReturnDocuments {
		t.Fatal(r, err)
	}
	got, err := AppendRerankAnswer(nil, []byte(`"id1"`), []byte(`[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}]`), &r, 12)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"id":"id1","results":[{"index":1,"relevance_score":0.9,"document":{"text":"b","id":7}},{"index":0,"relevance_score":0.1,"document":{"text":"a"}}],"model":"","usage":{"prompt_tokens":12,"total_tokens":12}}` {
		t.Fatal(string(got))
	}
	r.ReturnDocuments = false
	got, _ = AppendRerankAnswer(nil, nil, []byte(`[{"index":0,"relevance_score":1}]`), &r, -1)
	if string(got) != `{"id":"","results":[{"index":0,"relevance_score":1}],"model":""}` {
		t.Fatal(string(got))
	}
	r.ReturnDocuments = true
	for _, bad := range []string{`{}`, `[{"index":5,"relevance_score":1}]`, `[{"index":"0","relevance_score":1}]`} {
		if _, err := AppendRerankAnswer(nil, nil, []byte(bad), &r, -1); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
}
