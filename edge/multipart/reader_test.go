package multipart

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"strings"
	"testing"
	"testing/iotest"
)

const testBoundary = "gw0123456789abcdefTESTboundary"

// TestRoundTrip checks, for bodies from Go's mime/multipart.Writer in the
// field orders real clients use, that the output equals the body the
// writer makes with the model value replaced, byte for byte, however the
// input is split; and that Prepare read what the rules say.
func TestRoundTrip(t *testing.T) {
	audio := payload(300<<10, 1) // larger than the 64 KiB buffer and than the spool memory below
	small := payload(100, 2)
	cases := []struct {
		name       string
		fields     func(model string) []field
		wantPrompt string
		spilled    bool // the spool had to use a temp file (SpoolMemBytes is 16 KiB here)
	}{
		{"model first (python, curl)", func(m string) []field {
			return []field{text("model", m), text("prompt", "hello"), file("file", "a.mp3", audio), text("language", "en")}
		}, "hello", false},
		{"file first (openai-go sorts by name)", func(m string) []field {
			return []field{file("file", "a.mp3", audio), text("language", "en"), text("model", m), text("prompt", "hi there"), text("response_format", "json")}
		}, "hi there", true},
		{"images edits: image[] image[] mask model prompt", func(m string) []field {
			return []field{file("image[]", "a.png", small), file("image[]", "b.png", audio), file("mask", "m.png", small), text("model", m), text("n", "1"), text("prompt", "a cat"), text("size", "1024x1024")}
		}, "a cat", true},
		{"model last", func(m string) []field {
			return []field{text("prompt", "p"), file("file", "x.wav", small), text("model", m)}
		}, "p", false},
		{"only model", func(m string) []field { return []field{text("model", m)} }, "", false},
		{"empty file and empty text", func(m string) []field {
			return []field{file("file", "e.wav", nil), text("prompt", ""), text("model", m)}
		}, "", false},
		{"file content with CR LF and dashes", func(m string) []field {
			return []field{text("model", m), file("file", "t.txt", []byte("\r\n--\r\n-\r\n--gw0123456789abcdefTESTboundar\r\n\r\n"))}
		}, "", false},
	}
	for _, tc := range cases {
		in, ctype := build(t, testBoundary, tc.fields("alias-small")...)
		want, _ := build(t, testBoundary, tc.fields("gpt-4o-transcribe-upstream")...)
		for rname, mk := range readers(in) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				r, err := Acquire(mk(), []byte(ctype), Limits{SpoolMemBytes: 16 << 10})
				if err != nil {
					t.Fatal(err)
				}
				defer Release(r)
				if err := r.Prepare("model", "prompt"); err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				if v, ok := r.Value("model"); !ok || string(v) != "alias-small" {
					t.Fatalf("model = %q, %v; want alias-small", v, ok)
				}
				if got := string(r.AppendValues(nil, "prompt")); got != tc.wantPrompt {
					t.Fatalf("prompt = %q; want %q", got, tc.wantPrompt)
				}
				if got := r.spool.file != nil; got != tc.spilled {
					t.Fatalf("spilled = %v; want %v", got, tc.spilled)
				}
				if n, err := r.Replace("model", []byte("gpt-4o-transcribe-upstream")); err != nil || n != 1 {
					t.Fatalf("Replace = %d, %v", n, err)
				}
				size := r.OutputSize(int64(len(in)))
				var out bytes.Buffer
				if _, err := r.WriteTo(&out); err != nil {
					t.Fatalf("WriteTo: %v", err)
				}
				if !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("output differs from the rewritten body (got %d bytes, want %d)", out.Len(), len(want))
				}
				if size != int64(len(want)) {
					t.Fatalf("OutputSize = %d; want %d", size, len(want))
				}
				if r.BytesRead() != int64(len(in)) || r.BytesWritten() != int64(len(want)) {
					t.Fatalf("counters: read %d written %d; want %d %d", r.BytesRead(), r.BytesWritten(), len(in), len(want))
				}
			})
		}
	}
}

// TestReadMatchesWriteTo checks the pull interface produces the same bytes.
func TestReadMatchesWriteTo(t *testing.T) {
	in, ctype := build(t, "", file("file", "a.mp3", payload(200<<10, 3)), text("model", "m1"), text("x", "y"))
	want, _ := build(t, "", file("file", "a.mp3", payload(200<<10, 3)), text("model", "upstream"), text("x", "y"))
	// Same random boundary: rebuild want with in's boundary.
	b := ctype[strings.Index(ctype, "boundary=")+len("boundary="):]
	want, _ = build(t, b, file("file", "a.mp3", payload(200<<10, 3)), text("model", "upstream"), text("x", "y"))
	r, err := Acquire(bytes.NewReader(in), []byte(ctype), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer Release(r)
	if err := r.Prepare("model"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Replace("model", []byte("upstream")); err != nil {
		t.Fatal(err)
	}
	// iotest.TestReader reads with many buffer sizes (WriteTo hidden).
	if err := iotest.TestReader(struct{ io.Reader }{r}, want); err != nil {
		t.Fatal(err)
	}
}

// TestPrepareStops pins down where the first pass stops.
func TestPrepareStops(t *testing.T) {
	f := payload(1000, 4)
	cases := []struct {
		name     string
		need     []string
		fields   []field
		held     []bool // per part seen by Prepare
		seen     int    // parts Prepare saw
		wantText map[string]string
	}{
		{"model first stops at file", []string{"model"},
			[]field{text("model", "m"), text("prompt", "p"), file("file", "f", f), text("language", "en")},
			[]bool{true, true, false}, 3, map[string]string{"model": "m", "prompt": "p"}},
		{"file first reads to model and the text after", []string{"model"},
			[]field{file("file", "f", f), text("model", "m"), text("prompt", "p")},
			[]bool{true, true, true}, 3, map[string]string{"model": "m", "prompt": "p"}},
		{"need prompt after file", []string{"model", "prompt"},
			[]field{text("model", "m"), file("file", "f", f), text("prompt", "p"), file("file2", "g", f)},
			[]bool{true, true, true, false}, 4, map[string]string{"model": "m", "prompt": "p"}},
		{"absent needed field reads all", []string{"model", "prompt"},
			[]field{text("model", "m"), file("file", "f", f), text("x", "1")},
			[]bool{true, true, true}, 3, map[string]string{"model": "m", "x": "1"}},
		{"no need stops at first file", nil,
			[]field{text("a", "1"), file("file", "f", f), text("model", "m")},
			[]bool{true, false}, 2, map[string]string{"a": "1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, ctype := build(t, testBoundary, tc.fields...)
			r, err := Acquire(bytes.NewReader(in), []byte(ctype), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			defer Release(r)
			if err := r.Prepare(tc.need...); err != nil {
				t.Fatal(err)
			}
			if r.NumParts() != tc.seen {
				t.Fatalf("parts seen = %d; want %d", r.NumParts(), tc.seen)
			}
			for i, h := range tc.held {
				if r.Part(i).Held != h {
					t.Fatalf("part %d held = %v; want %v", i, r.Part(i).Held, h)
				}
			}
			for k, v := range tc.wantText {
				if got, ok := r.Value(k); !ok || string(got) != v {
					t.Fatalf("Value(%q) = %q, %v; want %q", k, got, ok, v)
				}
			}
			if _, err := r.WriteTo(io.Discard); err != nil {
				t.Fatal(err)
			}
			if r.NumParts() != len(tc.fields) {
				t.Fatalf("parts after WriteTo = %d; want %d", r.NumParts(), len(tc.fields))
			}
		})
	}
}

// TestEdits checks Remove and Append through Go's own reader, and that
// OutputSize matches.
func TestEdits(t *testing.T) {
	f := payload(70<<10, 5)
	cases := []struct {
		name   string
		fields []field
		edit   func(*Reader) error
		want   []string // name=value (files: name=<len>) in order, as mime/multipart reads the output
	}{
		{"remove first", []field{text("user", "u"), text("model", "m"), file("file", "a", f)},
			func(r *Reader) error { _, err := r.Remove("user"); return err },
			[]string{"model=m", "file=<71680>"}},
		{"remove middle and last held", []field{file("file", "a", f), text("model", "m"), text("stream", "true"), text("user", "u")},
			func(r *Reader) error {
				if _, err := r.Remove("stream"); err != nil {
					return err
				}
				_, err := r.Remove("user")
				return err
			},
			[]string{"file=<71680>", "model=m"}},
		{"remove last held then append", []field{text("model", "m"), text("user", "u")},
			func(r *Reader) error {
				if _, err := r.Remove("user"); err != nil {
					return err
				}
				return r.Append("added", []byte("v1"))
			},
			[]string{"model=m", "added=v1"}},
		{"append two after streamed file", []field{text("model", "m"), file("file", "a", f)},
			func(r *Reader) error {
				if err := r.Append("a", []byte("1")); err != nil {
					return err
				}
				return r.Append("b", nil)
			},
			[]string{"model=m", "file=<71680>", "a=1", "b="}},
		{"replace and remove same name removes", []field{text("model", "m"), text("x", "1")},
			func(r *Reader) error {
				if _, err := r.Replace("x", []byte("2")); err != nil {
					return err
				}
				_, err := r.Remove("x")
				return err
			},
			[]string{"model=m"}},
		{"remove a held file", []field{file("mask", "m.png", f), text("model", "m"), file("image[]", "a.png", f[:10])},
			func(r *Reader) error {
				if n, err := r.Remove("mask"); n != 1 || err != nil {
					return errors.New("mask not removed")
				}
				return nil
			},
			[]string{"model=m", "image[]=<10>"}},
		{"pending file is not held", []field{text("model", "m"), file("image[]", "a.png", f[:10])},
			func(r *Reader) error {
				if n, _ := r.Remove("image[]"); n != 0 {
					return errors.New("a part Prepare did not read whole was removed")
				}
				return nil
			},
			[]string{"model=m", "image[]=<10>"}},
		{"replace with empty", []field{text("model", "m"), text("x", "1")},
			func(r *Reader) error { _, err := r.Replace("model", nil); return err },
			[]string{"model=", "x=1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, ctype := build(t, testBoundary, tc.fields...)
			var size int64
			out, err := run(t, bytes.NewReader(in), ctype, Limits{}, []string{"model"}, func(r *Reader) error {
				err := tc.edit(r)
				size = r.OutputSize(int64(len(in)))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if size != int64(len(out)) {
				t.Fatalf("OutputSize = %d; output is %d bytes", size, len(out))
			}
			got := readStd(t, out, testBoundary)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
		})
	}
}

// readStd parses a body with Go's mime/multipart reader.
func readStd(t testing.TB, body []byte, boundary string) []string {
	t.Helper()
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var got []string
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatalf("mime/multipart rejects the output: %v", err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			t.Fatalf("mime/multipart rejects the output: %v", err)
		}
		if p.FileName() != "" {
			got = append(got, p.FormName()+"=<"+itoa(len(b))+">")
		} else {
			got = append(got, p.FormName()+"="+string(b))
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func TestEditErrors(t *testing.T) {
	in, ctype := build(t, testBoundary, text("model", "m"), file("file", "a", payload(10, 1)), text("model2", "x"))
	r, err := Acquire(bytes.NewReader(in), []byte(ctype), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer Release(r)
	if err := r.Prepare("model"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Replace("model", []byte("a--"+testBoundary)); err == nil {
		t.Fatal("Replace with the boundary in the value: no error")
	}
	if err := r.Append(`bad"name`, nil); err == nil {
		t.Fatal("Append with a quote in the name: no error")
	}
	if err := r.Append("x", []byte("--"+testBoundary)); err == nil {
		t.Fatal("Append with the boundary in the value: no error")
	}
	if err := r.Prepare("model"); err == nil {
		t.Fatal("second Prepare: no error")
	}
	if _, err := r.WriteTo(io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Replace("model", []byte("x")); !errors.Is(err, errStarted) {
		t.Fatalf("Replace after output: %v; want errStarted", err)
	}
}

// TestLateDuplicate: a needed or rewritten field that occurs again after
// the first pass fails the stream before the closing boundary is written.
func TestLateDuplicate(t *testing.T) {
	f := payload(100, 1)
	cases := []struct {
		name   string
		fields []field
		need   []string
		edit   func(*Reader) error
	}{
		{"needed model twice", []field{text("model", "a"), file("file", "f", f), text("model", "b")}, []string{"model"}, nil},
		{"needed as file later", []field{text("model", "a"), file("file", "f", f), file("model", "m", f)}, []string{"model"}, nil},
		{"replaced name later", []field{text("model", "a"), text("user", "u"), file("file", "f", f), text("user", "v")}, []string{"model"},
			func(r *Reader) error { _, err := r.Replace("user", []byte("x")); return err }},
		{"removed name later", []field{text("model", "a"), text("user", "u"), file("file", "f", f), text("user", "v")}, []string{"model"},
			func(r *Reader) error { _, err := r.Remove("user"); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, ctype := build(t, testBoundary, tc.fields...)
			out, err := run(t, bytes.NewReader(in), ctype, Limits{}, tc.need, tc.edit)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v; want ErrMalformed", err)
			}
			if bytes.Contains(out, []byte("--"+testBoundary+"--")) {
				t.Fatal("the closing boundary was written before the error")
			}
		})
	}
	// In the first pass already.
	in, ctype := build(t, testBoundary, file("file", "f", f), text("model", "a"), text("model", "b"))
	if _, err := run(t, bytes.NewReader(in), ctype, Limits{}, []string{"model"}, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v; want ErrMalformed", err)
	}
}

func TestPartInfo(t *testing.T) {
	body := "--XB\r\nContent-Type: text/plain\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n" +
		"--XB\r\nContent-Disposition: form-data; name=\"file\"; filename*=UTF-8''%C3%A9t%C3%A9.wav\r\nContent-Type: audio/wav\r\n\r\n12345\r\n" +
		"--XB\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\n2\r\n--XB--"
	r, err := Acquire(strings.NewReader(body), []byte("multipart/form-data; boundary=XB"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer Release(r)
	if _, err := r.WriteTo(io.Discard); err != nil { // Prepare() implied
		t.Fatal(err)
	}
	want := []Part{
		{Name: []byte("model"), ContentType: []byte("text/plain"), Value: []byte("m"), Size: 1, Held: true},
		{Name: []byte("file"), Filename: []byte("été.wav"), ContentType: []byte("audio/wav"), File: true, Size: 5},
		{Name: []byte("n"), Value: []byte("2"), Size: 1},
	}
	if r.NumParts() != len(want) {
		t.Fatalf("%d parts; want %d", r.NumParts(), len(want))
	}
	for i, w := range want {
		g := r.Part(i)
		if string(g.Name) != string(w.Name) || string(g.Filename) != string(w.Filename) || string(g.ContentType) != string(w.ContentType) ||
			string(g.Value) != string(w.Value) || g.File != w.File || g.Size != w.Size || g.Held != w.Held ||
			(g.ContentType == nil) != (w.ContentType == nil) {
			t.Errorf("part %d = %+v; want %+v", i, g, w)
		}
	}
}
