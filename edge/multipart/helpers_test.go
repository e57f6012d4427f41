package multipart

import (
	"bytes"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/textproto"
	"testing"
)

// field is one part for the test body builder: a file when filename != "".
type field struct {
	name, filename, ctype string
	value                 []byte
}

func text(name, v string) field { return field{name: name, value: []byte(v)} }

func file(name, filename string, data []byte) field {
	return field{name: name, filename: filename, ctype: "application/octet-stream", value: data}
}

// build encodes fields with Go's mime/multipart.Writer and the given
// boundary; it returns the body and its Content-Type.
func build(t testing.TB, boundary string, fields ...field) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if boundary != "" {
		if err := w.SetBoundary(boundary); err != nil {
			t.Fatalf("SetBoundary: %v", err)
		}
	}
	for _, f := range fields {
		var pw io.Writer
		var err error
		if f.filename != "" {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="`+f.name+`"; filename="`+f.filename+`"`)
			h.Set("Content-Type", f.ctype)
			pw, err = w.CreatePart(h)
		} else {
			pw, err = w.CreateFormField(f.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(f.value); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

// payload is deterministic pseudo-random file content.
func payload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// chunkReader returns its data in pieces of the sizes in cuts (cycled),
// to check that parsing does not depend on where reads split the input.
type chunkReader struct {
	data []byte
	cuts []int
	i    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := c.cuts[c.i%len(c.cuts)]
	c.i++
	if n > len(p) {
		n = len(p)
	}
	if n > len(c.data) {
		n = len(c.data)
	}
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// readers returns the ways tests feed a body: whole, byte by byte, in
// small odd chunks, and in random chunks.
func readers(body []byte) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":  func() io.Reader { return bytes.NewReader(body) },
		"byte":   func() io.Reader { return &chunkReader{data: body, cuts: []int{1}} },
		"odd":    func() io.Reader { return &chunkReader{data: body, cuts: []int{3, 7, 1, 250, 13}} },
		"random": func() io.Reader { return &chunkReader{data: body, cuts: randomCuts(len(body))} },
	}
}

func randomCuts(n int) []int {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	cuts := make([]int, 64)
	for i := range cuts {
		cuts[i] = 1 + r.IntN(100000)
	}
	return cuts
}

// run streams body through a Reader: Prepare(need), then edit, then
// WriteTo. It returns the output and the Reader's error.
func run(t testing.TB, src io.Reader, ctype string, lim Limits, need []string, edit func(*Reader) error) ([]byte, error) {
	t.Helper()
	r, err := Acquire(src, []byte(ctype), lim)
	if err != nil {
		return nil, err
	}
	defer Release(r)
	if err := r.Prepare(need...); err != nil {
		return nil, err
	}
	if edit != nil {
		if err := edit(r); err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	if _, err := r.WriteTo(&out); err != nil {
		return out.Bytes(), err
	}
	return out.Bytes(), nil
}
