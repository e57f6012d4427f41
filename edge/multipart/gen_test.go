package multipart

import (
	"bytes"
	"io"
	"testing"
)

// genReader produces head, then size bytes of file data, then tail,
// without holding the file in memory: the source of the 200 MB tests.
type genReader struct {
	head, tail []byte
	block      []byte
	size, done int64
	stage      int
}

// dataBlock is file content that cannot contain a dash-boundary: bytes
// count up modulo 251, so "--" never occurs.
var dataBlock = func() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}()

func (g *genReader) Read(p []byte) (int, error) {
	for {
		switch g.stage {
		case 0:
			if len(g.head) > 0 {
				n := copy(p, g.head)
				g.head = g.head[n:]
				return n, nil
			}
			g.stage = 1
		case 1:
			if g.done < g.size {
				off := int(g.done % int64(len(g.block)))
				chunk := g.block[off:]
				if rest := g.size - g.done; int64(len(chunk)) > rest {
					chunk = chunk[:rest]
				}
				n := copy(p, chunk)
				g.done += int64(n)
				return n, nil
			}
			g.stage = 2
		case 2:
			if len(g.tail) > 0 {
				n := copy(p, g.tail)
				g.tail = g.tail[n:]
				return n, nil
			}
			return 0, io.EOF
		}
	}
}

// uploadBody returns the head and tail around a file of the given size,
// with model before the file (modelFirst) or after it (openai-go's order).
func uploadBody(modelFirst bool) (head, tail []byte, ctype string) {
	b := "--" + testBoundary
	model := b + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"
	fileHead := b + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
	end := "\r\n" + b + "--\r\n"
	ctype = "multipart/form-data; boundary=" + testBoundary
	if modelFirst {
		return []byte(model + fileHead), []byte(end), ctype
	}
	return []byte(fileHead), []byte("\r\n" + model[:len(model)-2] + end), ctype
}

// countWriter counts and discards; it checks nothing else so the
// measurement is the Reader's.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// streamUpload runs one upload of size file bytes through a Reader.
func streamUpload(tb testing.TB, modelFirst bool, size int64, lim Limits) int64 {
	head, tail, ctype := uploadBody(modelFirst)
	g := &genReader{head: head, tail: tail, block: dataBlock, size: size}
	r, err := Acquire(g, []byte(ctype), lim)
	if err != nil {
		tb.Fatal(err)
	}
	defer Release(r)
	if err := r.Prepare("model"); err != nil {
		tb.Fatal(err)
	}
	if v, ok := r.Value("model"); !ok || !bytes.Equal(v, []byte("whisper-1")) {
		tb.Fatalf("model = %q", v)
	}
	if _, err := r.Replace("model", []byte("whisper-large-v3")); err != nil {
		tb.Fatal(err)
	}
	var w countWriter
	if _, err := r.WriteTo(&w); err != nil {
		tb.Fatal(err)
	}
	if want := int64(len(head)+len(tail)) + size + int64(len("whisper-large-v3")-len("whisper-1")); w.n != want {
		tb.Fatalf("wrote %d bytes; want %d", w.n, want)
	}
	return w.n
}
