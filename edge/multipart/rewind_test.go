package multipart

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// failWriter accepts n bytes, then fails: an upstream that went away.
type failWriter struct {
	bytes.Buffer
	n int
}

var errUpstream = errors.New("connection reset")

func (w *failWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) > w.n {
		k := w.n - w.Len()
		w.Buffer.Write(p[:k])
		return k, errUpstream
	}
	return w.Buffer.Write(p)
}

// TestRewind: PrepareAll holds the whole body, so a failed attempt can be
// retried against another target with another model name.
func TestRewind(t *testing.T) {
	audio := payload(300<<10, 11)
	fields := func(model string) []field {
		return []field{file("file", "a.wav", audio), text("model", model), text("prompt", "p"), text("user", "u")}
	}
	in, ctype := build(t, testBoundary, fields("alias")...)
	wantA, _ := build(t, testBoundary, fields("target-a")...)
	wantB, _ := build(t, testBoundary, file("file", "a.wav", audio), text("model", "target-b-longer"), text("prompt", "p"), text("extra", "1"))
	for rname, mk := range readers(in) {
		t.Run(rname, func(t *testing.T) {
			r, err := Acquire(mk(), []byte(ctype), Limits{SpoolMemBytes: 16 << 10})
			if err != nil {
				t.Fatal(err)
			}
			defer Release(r)
			if err := r.Rewind(); err == nil {
				t.Fatal("Rewind before PrepareAll: no error")
			}
			if err := r.PrepareAll("model"); err != nil {
				t.Fatal(err)
			}
			if r.BytesRead() != int64(len(in)) || r.NumParts() != 4 {
				t.Fatalf("PrepareAll read %d bytes, %d parts; want %d, 4", r.BytesRead(), r.NumParts(), len(in))
			}
			// Attempt 1 fails half-way.
			if _, err := r.Replace("model", []byte("target-a")); err != nil {
				t.Fatal(err)
			}
			fw := &failWriter{n: 100 << 10}
			if _, err := r.WriteTo(fw); !errors.Is(err, ErrWrite) || !errors.Is(err, errUpstream) {
				t.Fatalf("err = %v; want ErrWrite wrapping the upstream error", err)
			}
			if !bytes.Equal(fw.Bytes(), wantA[:fw.Len()]) {
				t.Fatal("the failed attempt sent other bytes")
			}
			// Attempt 2 to the same kind of target completes.
			if err := r.Rewind(); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Replace("model", []byte("target-a")); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if _, err := r.WriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), wantA) {
				t.Fatalf("attempt 2: err %v, output equal %v", err, bytes.Equal(out.Bytes(), wantA))
			}
			// Attempt 3: other model, the last part removed, a field appended.
			if err := r.Rewind(); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Replace("model", []byte("target-b-longer")); err != nil {
				t.Fatal(err)
			}
			if n, err := r.Remove("user"); n != 1 || err != nil {
				t.Fatalf("Remove = %d, %v", n, err)
			}
			if err := r.Append("extra", []byte("1")); err != nil {
				t.Fatal(err)
			}
			size := r.OutputSize(int64(len(in)))
			out.Reset()
			if _, err := r.WriteTo(&out); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), wantB) {
				t.Fatalf("attempt 3 output differs:\n%q\nwant\n%q", tail(out.Bytes()), tail(wantB))
			}
			if size != int64(len(wantB)) || r.BytesWritten() != int64(len(wantB)) {
				t.Fatalf("OutputSize %d, BytesWritten %d; want %d", size, r.BytesWritten(), len(wantB))
			}
		})
	}
}

func tail(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "model"); i > 0 {
		return s[i:]
	}
	return s
}

// TestRewindEpilogue: PrepareAll keeps the epilogue and appends before the
// closing boundary.
func TestRewindEpilogue(t *testing.T) {
	body := "pre\r\n--XB\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n--XB--\r\nepilogue"
	want := "pre\r\n--XB\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nup\r\n--XB\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--XB--\r\nepilogue"
	r, err := Acquire(strings.NewReader(body), []byte("multipart/form-data; boundary=XB"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer Release(r)
	if err := r.PrepareAll("model"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := r.Replace("model", []byte("up")); err != nil {
			t.Fatal(err)
		}
		if err := r.Append("a", []byte("1")); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := r.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("pass %d: %q; want %q", i, out.String(), want)
		}
		if err := r.Rewind(); err != nil {
			t.Fatal(err)
		}
	}
}
