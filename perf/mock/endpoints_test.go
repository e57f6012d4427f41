package mock_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"gw/perf/mock"
)

// TestMockEmbeddings: the same input gives the same unit vector in float
// and base64 form, of the requested length; token arrays embed too.
func TestMockEmbeddings(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	var fl, b64 struct {
		Data []struct {
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Model string `json:"model"`
		Usage struct {
			Prompt int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	b, _ := readAll(post(t, c, base+"/v1/embeddings", `{"model":"text-embedding-3-small","input":["a b","c"],"dimensions":8}`))
	if err := json.Unmarshal(b, &fl); err != nil || len(fl.Data) != 2 || fl.Model != "text-embedding-3-small" || fl.Usage.Prompt == 0 {
		t.Fatalf("float: %v %s", err, b)
	}
	var v []float32
	json.Unmarshal(fl.Data[0].Embedding, &v)
	want := mock.Embedding([]byte("a b"), 8)
	for i := range want {
		if v[i] != want[i] {
			t.Fatalf("float vector differs at %d", i)
		}
	}
	b, _ = readAll(post(t, c, base+"/v1/embeddings", `{"model":"m","input":"a b","dimensions":8,"encoding_format":"base64"}`))
	if err := json.Unmarshal(b, &b64); err != nil || len(b64.Data) != 1 {
		t.Fatalf("base64: %v %s", err, b)
	}
	var s string
	json.Unmarshal(b64.Data[0].Embedding, &s)
	raw, _ := base64.StdEncoding.DecodeString(s)
	for i := range want {
		if math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])) != want[i] {
			t.Fatalf("base64 vector differs at %d", i)
		}
	}
	b, _ = readAll(post(t, c, base+"/v1/embeddings", `{"model":"m","input":[1,2,3],"dimensions":4}`))
	if !strings.Contains(string(b), `"index":0`) || strings.Contains(string(b), `"index":1`) {
		t.Fatalf("token array: %s", b)
	}
	for _, bad := range []string{`{"model":"m","input":[]}`, `{"model":"m","input":"x","dimensions":0}`, `{"model":"m","input":"x","encoding_format":"int8"}`, `{"input":"x"}`} {
		if resp := post(t, c, base+"/v1/embeddings", bad); resp.StatusCode != 400 {
			t.Fatalf("%s: %d", bad, resp.StatusCode)
		}
	}
}

// TestMockCompletionsStream: text_completion chunks, the usage chunk only
// with include_usage, then [DONE].
func TestMockCompletionsStream(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	b, _ := readAll(post(t, c, base+"/v1/completions", `{"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":true}}`))
	data := sseData(t, b)
	if n := len(data); n != mock.DefaultChunks+3 || data[n-1] != "[DONE]" || !strings.Contains(data[n-2], `"choices":[],"usage":{`) ||
		!strings.Contains(data[0], `"object":"text_completion"`) {
		t.Fatalf("stream: %q", data)
	}
	b, _ = readAll(post(t, c, base+"/v1/completions", `{"model":"m","prompt":"x","stream":true}`))
	if strings.Contains(string(b), `"usage"`) {
		t.Fatalf("usage without include_usage: %s", b)
	}
}

// TestMockVideoTask: queued, in progress, completed on the third poll;
// the content only once completed; deleted tasks are gone.
func TestMockVideoTask(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	b, _ := readAll(post(t, c, base+"/v1/videos", `{"model":"sora-2","prompt":"x","seconds":"8"}`))
	v := object(t, string(b))
	id := v["id"].(string)
	if v["status"] != "queued" || v["seconds"] != "8" {
		t.Fatalf("create: %s", b)
	}
	if resp, _ := c.Get(base + "/v1/videos/" + id + "/content"); resp.StatusCode != 400 {
		t.Fatalf("content before completion: %d", resp.StatusCode)
	}
	var status []string
	for range mock.VideoPollsToComplete {
		resp, _ := c.Get(base + "/v1/videos/" + id)
		b, _ := readAll(resp)
		status = append(status, object(t, string(b))["status"].(string))
	}
	if strings.Join(status, ",") != "in_progress,in_progress,completed" {
		t.Fatalf("polls: %v", status)
	}
	resp, _ := c.Get(base + "/v1/videos/" + id + "/content")
	content, _ := readAll(resp)
	if resp.Header.Get("Content-Type") != "video/mp4" || string(content) != string(mock.VideoContent(mock.DefaultChunks, mock.DefaultChunkSize)) {
		t.Fatalf("content: %s %d bytes", resp.Header.Get("Content-Type"), len(content))
	}
	req, _ := newRequest("DELETE", base+"/v1/videos/"+id)
	if resp, _ := c.Do(req); resp.StatusCode != 200 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if resp, _ := c.Get(base + "/v1/videos/" + id); resp.StatusCode != 404 {
		t.Fatalf("after delete: %d", resp.StatusCode)
	}
}

func newRequest(method, url string) (*http.Request, error) { return http.NewRequest(method, url, nil) }
