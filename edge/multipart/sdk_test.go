package multipart

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/openai/openai-go"
)

// TestOpenAIGoBodies runs bodies made by openai-go's own multipart encoder
// (the request the SDK would send) through the Reader: openai-go sorts
// fields by name, so the file parts come before `model` and the first pass
// must spool them.
func TestOpenAIGoBodies(t *testing.T) {
	audio := payload(150<<10, 9)
	png := payload(5<<10, 10)
	type marshaler interface {
		MarshalMultipart() ([]byte, string, error)
	}
	cases := []struct {
		name       string
		params     marshaler
		model      string
		prompt     string
		firstPart  string
		wantFields []string
	}{
		{"audio transcription", openai.AudioTranscriptionNewParams{
			File:                   openai.File(bytes.NewReader(audio), "speech.mp3", "audio/mpeg"),
			Model:                  openai.AudioModelWhisper1,
			Language:               openai.String("en"),
			Prompt:                 openai.String("names: Zoë, Ana"),
			ResponseFormat:         openai.AudioResponseFormatVerboseJSON,
			Temperature:            openai.Float(0.2),
			TimestampGranularities: []string{"word", "segment"},
		}, "whisper-1", "names: Zoë, Ana", "file",
			[]string{"file=<153600>", "language=en", "model=gpt-4o-transcribe", "prompt=names: Zoë, Ana", "response_format=verbose_json", "temperature=0.2", "timestamp_granularities[]=word", "timestamp_granularities[]=segment"}},
		{"audio translation", openai.AudioTranslationNewParams{
			File:  openai.File(bytes.NewReader(audio), "de.wav", "audio/wav"),
			Model: openai.AudioModelWhisper1,
		}, "whisper-1", "", "file",
			[]string{"file=<153600>", "model=gpt-4o-transcribe"}},
		{"image edit with two images and a mask", openai.ImageEditParams{
			Image: openai.ImageEditParamsImageUnion{OfFileArray: []io.Reader{
				openai.File(bytes.NewReader(png), "a.png", "image/png"),
				openai.File(bytes.NewReader(audio), "b.png", "image/png"),
			}},
			Mask:   openai.File(bytes.NewReader(png), "mask.png", "image/png"),
			Model:  openai.ImageModelGPTImage1,
			Prompt: "add a hat",
			N:      openai.Int(1),
			Size:   openai.ImageEditParamsSize1024x1024,
		}, "gpt-image-1", "add a hat", "image[]",
			[]string{"image[]=<5120>", "image[]=<153600>", "mask=<5120>", "model=gpt-4o-transcribe", "n=1", "prompt=add a hat", "size=1024x1024"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, ctype, err := tc.params.MarshalMultipart()
			if err != nil {
				t.Fatal(err)
			}
			b, err := AppendBoundary(nil, []byte(ctype))
			if err != nil {
				t.Fatal(err)
			}
			oldModel := []byte("name=\"model\"\r\n\r\n" + tc.model + "\r\n")
			newModel := []byte("name=\"model\"\r\n\r\ngpt-4o-transcribe\r\n")
			want := bytes.Replace(in, oldModel, newModel, 1)
			if bytes.Equal(want, in) {
				t.Fatal("the SDK body has no model field where expected")
			}
			for rname, mk := range readers(in) {
				t.Run(rname, func(t *testing.T) {
					out, err := run(t, mk(), ctype, Limits{SpoolMemBytes: 16 << 10}, []string{"model", "prompt"}, func(r *Reader) error {
						if got := string(r.Part(0).Name); got != tc.firstPart {
							t.Errorf("first part %q; want %q (openai-go's field order changed?)", got, tc.firstPart)
						}
						if !r.Part(0).File || !strings.HasSuffix(string(r.Part(0).Filename), ".png") && !strings.Contains(string(r.Part(0).Filename), ".") {
							t.Errorf("first part is not a file with a filename: %+v", r.Part(0))
						}
						if v, _ := r.Value("model"); string(v) != tc.model {
							t.Errorf("model %q; want %q", v, tc.model)
						}
						if v := r.AppendValues(nil, "prompt"); string(v) != tc.prompt {
							t.Errorf("prompt %q; want %q", v, tc.prompt)
						}
						_, err := r.Replace("model", []byte("gpt-4o-transcribe"))
						return err
					})
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(out, want) {
						t.Fatalf("output is not the SDK body with the model replaced (got %d bytes, want %d)", len(out), len(want))
					}
					got := readStd(t, out, string(b))
					if strings.Join(got, "|") != strings.Join(tc.wantFields, "|") {
						t.Fatalf("fields %q; want %q", got, tc.wantFields)
					}
				})
			}
		})
	}
}
