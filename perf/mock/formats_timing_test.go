package mock_test

import "testing"

func BenchmarkBufferedMessages(b *testing.B) {
	benchPost(b, "/v1/messages", anthropicBody, []byte(`"cache_read_input_tokens":0,"output_tokens":5}}`),
		"anthropic-version", "2023-06-01")
}

func BenchmarkStreamMessages(b *testing.B) {
	b.Run("chunks=5", func(b *testing.B) {
		benchPost(b, "/v1/messages", anthropicStreamBody, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
			"anthropic-version", "2023-06-01")
	})
	b.Run("chunks=50", func(b *testing.B) {
		benchPost(b, "/v1/messages", anthropicStreamBody, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
			"anthropic-version", "2023-06-01", "x-mock-chunks", "50")
	})
}

func BenchmarkBufferedResponses(b *testing.B) {
	benchPost(b, "/v1/responses", responsesBody, []byte(`"user":null,"metadata":{}}`))
}

func BenchmarkStreamResponses(b *testing.B) {
	b.Run("chunks=5", func(b *testing.B) {
		benchPost(b, "/v1/responses", responsesStreamBody, []byte(`"user":null,"metadata":{}}}`+"\n\n"))
	})
	b.Run("chunks=50", func(b *testing.B) {
		benchPost(b, "/v1/responses", responsesStreamBody, []byte(`"user":null,"metadata":{}}}`+"\n\n"), "x-mock-chunks", "50")
	})
}
