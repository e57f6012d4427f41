package rawsock

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns a wrapped client connection and the server end of a loopback
// TCP connection accepted through a wrapping Listener.
func pair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wl := Listener{Listener: ln}
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := wl.Accept()
		if err != nil {
			acc <- nil
			return
		}
		acc <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-acc
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return Wrap(c), s
}

func TestWrapOnlyTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Wrap(a) != a {
		t.Fatal("a net.Pipe connection must come back unwrapped")
	}
	c, s := pair(t)
	for _, conn := range []net.Conn{c, s} {
		if _, ok := conn.(*Conn); !ok && Supported {
			t.Fatalf("%T: want *Conn on this platform", conn)
		}
	}
}

func TestReadWrite(t *testing.T) {
	c, s := pair(t)
	// Larger than any socket buffer: the writer meets EAGAIN and waits.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(big)
		done <- err
	}()
	got := make([]byte, 0, len(big))
	buf := make([]byte, 64<<10)
	for len(got) < len(big) {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:n]...)
	}
	if err := <-done; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, big) {
		t.Fatal("bytes differ")
	}
	if n, err := c.Write(nil); n != 0 || err != nil {
		t.Fatalf("empty write: %d, %v", n, err)
	}
	if n, err := s.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
}

func TestEOFDeadlineAndClose(t *testing.T) {
	tests := []struct {
		name  string
		setup func(c, s net.Conn)
		check func(t *testing.T, n int, err error)
	}{
		{"peer closed", func(c, s net.Conn) { c.Close() }, func(t *testing.T, n int, err error) {
			if n != 0 || err != io.EOF {
				t.Fatalf("got %d, %v; want 0, io.EOF", n, err)
			}
		}},
		{"deadline", func(c, s net.Conn) { s.SetReadDeadline(time.Now().Add(20 * time.Millisecond)) }, func(t *testing.T, n int, err error) {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("got %d, %v; want a timeout", n, err)
			}
		}},
		{"closed locally while reading", func(c, s net.Conn) {
			time.AfterFunc(20*time.Millisecond, func() { s.Close() })
		}, func(t *testing.T, n int, err error) {
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("got %d, %v; want net.ErrClosed", n, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s := pair(t)
			tt.setup(c, s)
			n, err := s.Read(make([]byte, 16))
			tt.check(t, n, err)
		})
	}
}

func TestWriteToResetPeer(t *testing.T) {
	c, s := pair(t)
	tc, ok := s.(*net.TCPConn)
	if w, wrapped := s.(*Conn); wrapped {
		tc, ok = w.Unwrap().(*net.TCPConn)
	}
	if !ok {
		t.Fatalf("%T: want a TCP connection", s)
	}
	tc.SetLinger(0)
	s.Close() // RST
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = c.Write(make([]byte, 1024))
		time.Sleep(time.Millisecond)
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "write" {
		t.Fatalf("write to a reset peer: %v; want a *net.OpError from write", err)
	}
}

func TestAllocs(t *testing.T) {
	c, s := pair(t)
	msg := []byte("ping")
	buf := make([]byte, 16)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(s, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per write + read; want 0", allocs)
	}
}

func BenchmarkWriteRead(b *testing.B) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() { c, _ := Listener{Listener: ln}.Accept(); acc <- c }()
	c0, _ := net.Dial("tcp", ln.Addr().String())
	c, s := Wrap(c0), <-acc
	defer c.Close()
	defer s.Close()
	msg := make([]byte, 512)
	buf := make([]byte, 512)
	b.ReportAllocs()
	for b.Loop() {
		c.Write(msg)
		io.ReadFull(s, buf)
	}
}

// TestCork: a corked write leaves with the next one; held bytes also leave
// before the next Read and at Close, so nothing waits for a write that
// never comes.
func TestCork(t *testing.T) {
	readSoon := func(t *testing.T, c net.Conn, want string) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
			t.Fatalf("read %q, %v; want %q", buf, err, want)
		}
	}
	nothingYet := func(t *testing.T, c net.Conn) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
		if n, err := c.Read(make([]byte, 64)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read %d bytes (%v) of a corked write", n, err)
		}
	}
	tests := []struct {
		name    string
		release func(t *testing.T, s, c net.Conn) string // what the peer then reads
	}{
		{"next write", func(t *testing.T, s, c net.Conn) string {
			if n, err := s.Write([]byte("0\r\n\r\n")); n != 5 || err != nil {
				t.Fatalf("write after the corked one: %d, %v", n, err)
			}
			return "last batch0\r\n\r\n"
		}},
		{"next read", func(t *testing.T, s, c net.Conn) string {
			c.Write([]byte("next request"))
			readSoon(t, s, "next request")
			return "last batch"
		}},
		{"close", func(t *testing.T, s, c net.Conn) string {
			s.Close()
			return "last batch"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s := pair(t)
			k, ok := s.(*Conn)
			if !ok {
				t.Skip("raw sockets not supported here")
			}
			k.Cork()
			if n, err := s.Write([]byte("last batch")); n != 10 || err != nil {
				t.Fatalf("corked write: %d, %v", n, err)
			}
			nothingYet(t, c)
			readSoon(t, c, tt.release(t, s, c))
		})
	}
}

// TestWriteOnRead: the held message leaves from inside the next Read, also
// when the socket takes only part of it at once; a write error ends that
// Read as a write error.
func TestWriteOnRead(t *testing.T) {
	for _, size := range []int{64, 8 << 20} {
		c, s := pair(t)
		w, ok := c.(*Conn)
		if !ok {
			t.Skip("raw sockets are not used here")
		}
		msg := bytes.Repeat([]byte("m"), size)
		if n, err := w.WriteOnRead(msg); n != size || err != nil {
			t.Fatalf("WriteOnRead: %d, %v", n, err)
		}
		go func() {
			got := make([]byte, size)
			if _, err := io.ReadFull(s, got); err == nil && bytes.Equal(got, msg) {
				s.Write([]byte("ok"))
			}
		}()
		buf := make([]byte, 2)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ok" {
			t.Fatalf("size %d: read %q, %v; want the answer", size, buf, err)
		}
	}
	t.Run("reset peer", func(t *testing.T) {
		c, s := pair(t)
		w, ok := c.(*Conn)
		if !ok {
			t.Skip("raw sockets are not used here")
		}
		tc := s.(*Conn).Unwrap().(*net.TCPConn)
		tc.SetLinger(0)
		s.Close() // RST
		time.Sleep(20 * time.Millisecond)
		c.Write([]byte("x")) // the first write after the RST may still be taken
		time.Sleep(20 * time.Millisecond)
		w.WriteOnRead([]byte("request"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := c.Read(make([]byte, 8))
		var op *net.OpError
		if !errors.As(err, &op) {
			t.Fatalf("read after a write to a reset peer: %v; want a *net.OpError", err)
		}
	})
}
