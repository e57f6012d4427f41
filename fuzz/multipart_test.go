package fuzz

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"testing"

	emp "gw/edge/multipart"
)

// mpResult is what one run of the Reader produced.
type mpResult struct {
	out   []byte
	kind  error // nil or the error's kind
	model []byte
	parts int
}

var mpKinds = []error{emp.ErrMalformed, emp.ErrTooLarge, emp.ErrRead, emp.ErrWrite, emp.ErrSpool}

func mpKind(err error) error {
	if err == nil {
		return nil
	}
	for _, k := range mpKinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return err
}

// mpRun streams src through a Reader with small limits (so the fuzzer
// reaches them): Prepare("model"), replace model when present, WriteTo.
func mpRun(src io.Reader, ctype []byte, replace []byte) mpResult {
	return mpRunMode(src, ctype, replace, false)
}

// mpRunMode with all set uses PrepareAll and produces the output twice
// (Rewind in between); a second output that differs is reported as a
// mismatch kind.
func mpRunMode(src io.Reader, ctype []byte, replace []byte, all bool) mpResult {
	r, err := emp.Acquire(src, ctype, emp.Limits{MaxBodyBytes: 1 << 20, MaxParts: 32, MaxHeaderBytes: 1024, MaxTextBytes: 64 << 10, SpoolMemBytes: 16 << 10})
	if err != nil {
		return mpResult{kind: mpKind(err)}
	}
	defer emp.Release(r)
	var res mpResult
	prepare := r.Prepare
	if all {
		prepare = r.PrepareAll
	}
	if err := prepare("model"); err != nil {
		res.kind = mpKind(err)
		return res
	}
	edit := func() error {
		if v, ok := r.Value("model"); ok {
			res.model = bytes.Clone(v)
			if replace != nil {
				if _, err := r.Replace("model", replace); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := edit(); err != nil {
		res.kind = mpKind(err)
		return res
	}
	var out bytes.Buffer
	_, err = r.WriteTo(&out)
	res.out, res.kind, res.parts = out.Bytes(), mpKind(err), r.NumParts()
	if all && err == nil {
		if err := r.Rewind(); err != nil {
			res.kind = err
			return res
		}
		if err := edit(); err != nil {
			res.kind = err
			return res
		}
		var again bytes.Buffer
		if _, err := r.WriteTo(&again); err != nil || !bytes.Equal(again.Bytes(), res.out) {
			res.kind = errRewindMismatch
		}
	}
	return res
}

var errRewindMismatch = errors.New("output after Rewind differs")

// mpPieces hands out its data in pieces whose sizes come from seed, from
// one byte to past the Reader's 64 KiB buffer.
type mpPieces struct {
	data []byte
	seed uint64
}

func (p *mpPieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	p.seed ^= p.seed << 13
	p.seed ^= p.seed >> 7
	p.seed ^= p.seed << 17
	n := int(p.seed % 97)
	if p.seed&0x700 == 0 {
		n = int(p.seed>>11) % (80 << 10)
	}
	n = max(1, min(n, len(b), len(p.data)))
	copy(b, p.data[:n])
	p.data = p.data[n:]
	return n, nil
}

func mpSeedBodies(f *testing.F) {
	for _, fields := range [][][3]string{
		{{"model", "", "whisper-1"}, {"file", "a.wav", "RIFF....WAVE"}},
		{{"file", "a.mp3", "\r\n--\r\n"}, {"model", "", "m"}, {"prompt", "", "p"}},
		{{"image[]", "a.png", "\x89PNG"}, {"image[]", "b.png", ""}, {"mask", "m.png", "x"}, {"model", "", "gpt-image-1"}, {"prompt", "", "hat"}},
	} {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		_ = w.SetBoundary("fuzzBoundary0123")
		for _, fl := range fields {
			var pw io.Writer
			if fl[1] != "" {
				pw, _ = w.CreateFormFile(fl[0], fl[1])
			} else {
				pw, _ = w.CreateFormField(fl[0])
			}
			_, _ = pw.Write([]byte(fl[2]))
		}
		_ = w.Close()
		f.Add(buf.Bytes(), "fuzzBoundary0123", uint64(len(buf.Bytes())))
	}
	f.Add([]byte("pre\r\n--b \r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n--b--\r\nepi"), "b", uint64(3))
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=model; filename*=UTF-8''%E2%82%AC\r\n\r\nm\r\n--b--"), "b", uint64(5))
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n--b--"), "b", uint64(7))
	f.Add([]byte("--b\nContent-Disposition: form-data; name=\"model\"\n\nm\n--b--"), "b", uint64(9))
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=x; name*=UTF-8''model\r\n\r\nm\r\n--b--"), "b", uint64(11))
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=model\r\n\r\nm\r\n--b\r\nContent-Disposition: form-data; name=f; filename=a\r\n\r\nxx\r\n--b\r\nContent-Disposition: form-data; name=model\r\n\r\nm2\r\n--b--"), "b", uint64(13))
}

// FuzzMultipartReader: any body and boundary. The Reader never panics; its
// result (output bytes, error kind, model) does not depend on how the
// input is split; and every body it accepts, Go's mime/multipart reads as
// the same parts (names and contents), so the fields the gateway routes on
// and judges are the ones a standard parser sees.
func FuzzMultipartReader(f *testing.F) {
	mpSeedBodies(f)
	f.Fuzz(func(t *testing.T, body []byte, boundary string, seed uint64) {
		ctype := []byte("multipart/form-data; boundary=\"" + boundary + "\"")
		whole := mpRun(bytes.NewReader(body), ctype, []byte("upstream-x"))
		split := mpRun(&mpPieces{data: body, seed: seed | 1}, ctype, []byte("upstream-x"))
		if whole.kind != split.kind || !bytes.Equal(whole.out, split.out) || !bytes.Equal(whole.model, split.model) {
			t.Fatalf("result depends on read splits:\nwhole: %v %q %q\nsplit: %v %q %q", whole.kind, whole.model, whole.out, split.kind, split.model, split.out)
		}
		held := mpRunMode(&mpPieces{data: body, seed: seed ^ 0x5bd1e995}, ctype, []byte("upstream-x"), true)
		// On an error only the kind must agree: PrepareAll finds a late
		// problem in its first pass, Prepare while streaming.
		if held.kind != whole.kind || whole.kind == nil && (!bytes.Equal(held.out, whole.out) || !bytes.Equal(held.model, whole.model)) {
			t.Fatalf("PrepareAll (and Rewind) differ from Prepare:\nPrepare:    %v %q %q\nPrepareAll: %v %q %q", whole.kind, whole.model, whole.out, held.kind, held.model, held.out)
		}
		if whole.kind != nil {
			return
		}
		// Accepted without a rewrite: the output is the input.
		plain := mpRun(bytes.NewReader(body), ctype, nil)
		if plain.kind != nil || !bytes.Equal(plain.out, body) {
			t.Fatalf("accepted body is not passed through unchanged: %v", plain.kind)
		}
		b, err := emp.AppendBoundary(nil, ctype)
		if err != nil {
			t.Fatal(err)
		}
		ours := mpParts(t, body, string(b))
		std, err := mpStdParts(body, string(b))
		if err != nil {
			t.Fatalf("the Reader accepts a body mime/multipart rejects (%v): %q", err, body)
		}
		if !equalParts(ours, std) {
			t.Fatalf("parsers disagree:\nours: %q\nstd:  %q\nbody: %q", ours, std, body)
		}
		// The rewritten output reads back with the new model and the same parts otherwise.
		if whole.model != nil {
			again := mpRun(bytes.NewReader(whole.out), ctype, nil)
			if again.kind != nil || string(again.model) != "upstream-x" || again.parts != whole.parts {
				t.Fatalf("rewritten body does not read back: %v model %q parts %d/%d", again.kind, again.model, again.parts, whole.parts)
			}
		}
	})
}

// mpParts lists name=content of every part as this package reads them.
func mpParts(t *testing.T, body []byte, boundary string) [][2]string {
	r, err := emp.Acquire(bytes.NewReader(body), []byte("multipart/form-data; boundary=\""+boundary+"\""), emp.Limits{MaxTextBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer emp.Release(r)
	// Text values are compared whole, file bodies by size (the Reader does
	// not keep file data).
	if _, err := r.WriteTo(io.Discard); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for i := 0; i < r.NumParts(); i++ {
		p := r.Part(i)
		v := string(p.Value)
		if p.File {
			v = "<file " + itoa64(p.Size) + ">"
		}
		out = append(out, [2]string{string(p.Name), v})
	}
	return out
}

func mpStdParts(body []byte, boundary string) ([][2]string, error) {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var out [][2]string
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, err
		}
		v := string(b)
		if isFilePart(p.Header) {
			v = "<file " + itoa64(int64(len(b))) + ">"
		}
		out = append(out, [2]string{p.FormName(), v})
	}
}

// isFilePart: the disposition has a filename (mime.ParseMediaType folds
// filename* into it).
func isFilePart(h textproto.MIMEHeader) bool {
	_, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
	if err != nil {
		return false
	}
	_, ok := params["filename"]
	return ok
}

func equalParts(a, b [][2]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func itoa64(n int64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// FuzzMultipartRoundTrip: bodies written by Go's mime/multipart.Writer from
// fuzzed fields come out byte for byte as the same writer's body with the
// model value replaced, however the input is split.
func FuzzMultipartRoundTrip(f *testing.F) {
	f.Add([]byte("whisper-1"), []byte("file data \r\n-- here"), []byte("a prompt"), "abcBoundary", uint8(0), uint64(1))
	f.Add([]byte(""), []byte(""), []byte(""), "x", uint8(1), uint64(2))
	f.Add([]byte("m"), bytes.Repeat([]byte("\r\n--"), 30000), []byte("p"), "'()+_,-./:=? x", uint8(2), uint64(3))
	f.Fuzz(func(t *testing.T, model, data, prompt []byte, boundary string, order uint8, seed uint64) {
		if len(boundary) == 0 || len(boundary) > 70 {
			return
		}
		dash := []byte("--" + boundary)
		for _, v := range [][]byte{model, data, prompt} {
			if bytes.Contains(v, dash) {
				return // a boundary inside content is rejected by design (see the package doc)
			}
		}
		newModel := []byte("upstream/" + string(bytes.ToUpper(model)))
		if bytes.Contains(newModel, dash) {
			return
		}
		in, err := mpWrite(boundary, order, model, data, prompt)
		if err != nil {
			return // SetBoundary rejected the boundary
		}
		want, _ := mpWrite(boundary, order, newModel, data, prompt)
		ctype := []byte("multipart/form-data; boundary=\"" + boundary + "\"")
		for _, src := range []io.Reader{bytes.NewReader(in), &mpPieces{data: in, seed: seed | 1}} {
			res := mpRun(src, ctype, newModel)
			if res.kind != nil {
				t.Fatalf("writer body rejected: %v\n%q", res.kind, in)
			}
			if !bytes.Equal(res.model, model) {
				t.Fatalf("model %q; want %q", res.model, model)
			}
			if !bytes.Equal(res.out, want) {
				t.Fatalf("output is not the rewritten body:\ngot  %q\nwant %q", res.out, want)
			}
		}
	})
}

// mpWrite builds a body of model, a file, prompt and a second file in one
// of six orders.
func mpWrite(boundary string, order uint8, model, data, prompt []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(boundary); err != nil {
		return nil, err
	}
	type part struct {
		name, filename string
		v              []byte
	}
	ps := []part{{"model", "", model}, {"file", "a.wav", data}, {"prompt", "", prompt}, {"image[]", "x.png", data[:len(data)/2]}}
	// Rotate and maybe swap so model lands first, in the middle or last.
	k := int(order) % len(ps)
	ps = append(ps[k:], ps[:k]...)
	if order&4 != 0 {
		ps[0], ps[len(ps)-1] = ps[len(ps)-1], ps[0]
	}
	for _, p := range ps {
		var pw io.Writer
		var err error
		if p.filename != "" {
			pw, err = w.CreateFormFile(p.name, p.filename)
		} else {
			pw, err = w.CreateFormField(p.name)
		}
		if err != nil {
			return nil, err
		}
		_, _ = pw.Write(p.v)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
