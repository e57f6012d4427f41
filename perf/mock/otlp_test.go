package mock_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"gw/admin/resources"
	gwusage "gw/edge/usage"
	"gw/edge/usage/otlp"
	"gw/perf/mock"
)

// TestOTLPTraces: batches from gw's own otlp_http exporter (plain and
// gzip) arrive at POST /v1/traces, are decoded and counted, and GET
// /_mock/otlp shows them; model-request stats are untouched.
func TestOTLPTraces(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	recs := []gwusage.Record{
		{OccurredAt: time.Now(), RequestID: gwusage.NewRequestID(), Attempt: 1, AttemptKind: gwusage.AttemptFinal, StatusCode: 200, Model: "gpt-4o", Operation: "chat.completions"},
		{OccurredAt: time.Now(), RequestID: gwusage.NewRequestID(), Attempt: 1, AttemptKind: gwusage.AttemptFinal, StatusCode: 503, Model: "fast", Operation: "messages"},
	}
	for _, comp := range []string{resources.OTLPCompressionNone, resources.OTLPCompressionGzip} {
		sk := otlp.New(&resources.OTLPHTTPExporter{Endpoint: base + "/v1/traces", TimeoutMS: 5000, Compression: comp}, "gw")
		enc := gwusage.Encoder{Sink: sk}
		payload, err := enc.Encode(nil, recs)
		if err != nil {
			t.Fatal(err)
		}
		if err := sk.Send(context.Background(), &gwusage.Batch{ID: "b-" + comp, Payload: payload, Count: len(recs)}); err != nil {
			t.Fatalf("%s: send: %v", comp, err)
		}
	}
	st := s.OTLP()
	if st.Requests != 2 || st.Spans != 4 || st.Rejected != 0 || len(st.Latest) != 4 {
		t.Fatalf("OTLP stats %+v; want 2 requests, 4 spans", st)
	}
	if got := st.Latest[1].Attributes["gen_ai.request.model"]; got != "fast" {
		t.Errorf("second span's model %v; want fast (attributes %v)", got, st.Latest[1].Attributes)
	}
	if s.Stats().Requests != 0 {
		t.Errorf("OTLP requests counted as model requests: %+v", s.Stats())
	}

	// The inspection endpoint serves the same as JSON, and DELETE forgets.
	resp, err := http.Get(base + "/_mock/otlp")
	if err != nil {
		t.Fatal(err)
	}
	var got mock.OTLPStats
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || got.Spans != 4 {
		t.Fatalf("GET /_mock/otlp: %+v, %v", got, err)
	}
	req, _ := http.NewRequest(http.MethodDelete, base+"/_mock/otlp", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /_mock/otlp: %v %v", resp, err)
	}
	if st := s.OTLP(); st.Spans != 0 || len(st.Latest) != 0 {
		t.Fatalf("after DELETE: %+v", st)
	}
}

// TestOTLPTracesRejects: what a collector would refuse is refused and counted.
func TestOTLPTracesRejects(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	for _, tc := range []struct {
		ctype, enc, body string
		want             int
	}{
		{"application/json", "", "{}", http.StatusUnsupportedMediaType},
		{"application/x-protobuf", "", "\xff\xff\xff", http.StatusBadRequest},
		{"application/x-protobuf", "gzip", "not gzip", http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/traces", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ctype)
		if tc.enc != "" {
			req.Header.Set("Content-Encoding", tc.enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%+v: status %d; want %d", tc, resp.StatusCode, tc.want)
		}
	}
	if st := s.OTLP(); st.Rejected != 3 || st.Requests != 0 {
		t.Fatalf("stats %+v; want 3 rejected", st)
	}
}
