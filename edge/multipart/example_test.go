package multipart_test

import (
	"bytes"
	"errors"
	"fmt"
	"mime/multipart"

	emp "gw/edge/multipart"
)

// The edge's use for /v1/audio/transcriptions: read model (and prompt, for
// a guardrail) before anything is sent, rewrite the alias, stream the rest.
func Example() {
	// A caller's body, as openai-go writes it: the file before model.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "speech.wav")
	fw.Write([]byte("RIFF....WAVEfmt "))
	mw.WriteField("model", "fast-stt")
	mw.WriteField("prompt", "Zoë, Ana")
	mw.Close()
	contentType := []byte(mw.FormDataContentType())
	inSize := int64(body.Len()) // the caller's Content-Length

	r, err := emp.Acquire(&body, contentType, emp.Limits{MaxBodyBytes: 25 << 20})
	if err != nil {
		fmt.Println("400:", err)
		return
	}
	defer emp.Release(r)
	if err := r.Prepare("model", "prompt"); err != nil {
		if errors.Is(err, emp.ErrTooLarge) {
			fmt.Println("413")
		}
		return
	}
	alias, _ := r.Value("model")
	prompt := r.AppendValues(nil, "prompt") // what the input guardrail judges
	fmt.Printf("route %s, judge %q\n", alias, prompt)

	r.Replace("model", []byte("whisper-1")) // the upstream's model name
	fmt.Println("upstream Content-Length:", r.OutputSize(inSize))

	var upstream bytes.Buffer // in the edge: the upstream request body stream
	if _, err := r.WriteTo(&upstream); err != nil {
		fmt.Println("abort the upstream request:", err)
		return
	}
	fmt.Println("sent", upstream.Len(), "bytes; read", r.BytesRead())
	// Output:
	// route fast-stt, judge "Zoë, Ana"
	// upstream Content-Length: 505
	// sent 505 bytes; read 504
}
