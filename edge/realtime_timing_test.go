package edge

import "testing"

// realtimeBatch is 64 upstream frames as they come during a response:
// audio deltas (base64, ~1 KB), transcript deltas and a response.done.
func realtimeBatch() (batch []byte, frames int) {
	audio := wsFrame(wsOpText, true, []byte(`{"type":"response.audio.delta","event_id":"event_1","response_id":"resp_1","item_id":"item_1","output_index":0,"content_index":0,"delta":"`+string(make([]byte, 0))+repeatB64(1024)+`"}`), false, testKey)
	text := wsFrame(wsOpText, true, []byte(`{"type":"response.audio_transcript.delta","event_id":"event_2","response_id":"resp_1","item_id":"item_1","output_index":0,"content_index":0,"delta":"hello"}`), false, testKey)
	for i := 0; i < 31; i++ {
		batch = append(batch, audio...)
		batch = append(batch, text...)
	}
	batch = append(batch, wsFrame(wsOpText, true, []byte(responseDone), false, testKey)...)
	batch = append(batch, wsFrame(wsOpPing, true, nil, false, testKey)...)
	return batch, 64
}

func repeatB64(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i%64]
	}
	return string(b)
}

// BenchmarkRealtimeScan: the relay's per-frame work on the upstream leg
// (header parse, prefix check, response.done capture and usage read), per
// frame.
func BenchmarkRealtimeScan(b *testing.B) {
	batch, frames := realtimeBatch()
	s := wsScanner{usage: true}
	b.ReportAllocs()
	b.SetBytes(int64(len(batch) / frames))
	b.ResetTimer()
	for i := 0; i < b.N; i += frames {
		if n, err := s.feed(batch); err != nil || n != len(batch) {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkRealtimeRelay: frames relayed through a session's upstream leg
// over real loopback TCP (the far upstream writes, the far caller reads),
// one op per frame. Run with -cpu 1 for the one-core figure.
func BenchmarkRealtimeRelay(b *testing.B) {
	small := wsFrame(wsOpText, true, []byte(`{"type":"response.audio_transcript.delta","event_id":"event_2","response_id":"resp_1","item_id":"item_1","output_index":0,"content_index":0,"delta":"hello"}`), false, testKey)
	const perWrite = 64
	var batch []byte
	for i := 0; i < perWrite; i++ {
		batch = append(batch, small...)
	}
	s, callerFar, upFar := relayPair(b)
	done := make(chan struct{})
	go func() { s.pump(&s.fromUp, s.up, s.caller, false); close(done) }()
	total := int64(b.N) * int64(len(small))
	drained := make(chan struct{})
	go func() {
		buf := make([]byte, 64<<10)
		var got int64
		for got < total {
			n, err := callerFar.Read(buf)
			if err != nil {
				break
			}
			got += int64(n)
		}
		close(drained)
	}()
	b.ReportAllocs()
	b.SetBytes(int64(len(small)))
	b.ResetTimer()
	for left := b.N; left > 0; left -= perWrite {
		w := batch
		if left < perWrite {
			w = batch[:left*len(small)]
		}
		if _, err := upFar.Write(w); err != nil {
			b.Fatal(err)
		}
	}
	<-drained
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	upFar.Close()
	<-done
}
