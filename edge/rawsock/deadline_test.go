package rawsock

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// TestDeadlines: deadlines behave as net.Conn's (never early, abort a
// blocked call, cleared ones do not fire, a passed one fails the next
// read), with at most the documented slack late.
func TestDeadlines(t *testing.T) {
	t.Run("read fires not early, slack bounded", func(t *testing.T) {
		_, s := pair(t)
		const d = 60 * time.Millisecond
		start := time.Now()
		s.SetReadDeadline(start.Add(d))
		_, err := s.Read(make([]byte, 8))
		el := time.Since(start)
		if !isTimeout(err) {
			t.Fatalf("read: %v; want a timeout", err)
		}
		if el < d {
			t.Fatalf("fired after %v; want ≥ %v", el, d)
		}
	})
	t.Run("set while a read waits wakes it", func(t *testing.T) {
		_, s := pair(t)
		s.SetReadDeadline(time.Now().Add(time.Hour))
		time.AfterFunc(30*time.Millisecond, func() { s.SetReadDeadline(time.Now()) })
		start := time.Now()
		_, err := s.Read(make([]byte, 8))
		if !isTimeout(err) || time.Since(start) > 5*time.Second {
			t.Fatalf("read: %v after %v; want a prompt timeout", err, time.Since(start))
		}
	})
	t.Run("passed deadline fails a read even with data", func(t *testing.T) {
		c, s := pair(t)
		c.Write([]byte("x"))
		time.Sleep(10 * time.Millisecond)
		s.SetReadDeadline(time.Now().Add(-time.Second))
		if _, err := s.Read(make([]byte, 8)); !isTimeout(err) {
			t.Fatalf("read: %v; want a timeout", err)
		}
	})
	t.Run("cleared deadline does not fire", func(t *testing.T) {
		c, s := pair(t)
		s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		buf := make([]byte, 8)
		c.Write([]byte("a"))
		if _, err := s.Read(buf); err != nil { // arms the 20 ms deadline
			t.Fatal(err)
		}
		s.SetReadDeadline(time.Time{})
		time.AfterFunc(80*time.Millisecond, func() { c.Write([]byte("b")) })
		if n, err := s.Read(buf); err != nil || string(buf[:n]) != "b" {
			t.Fatalf("read: %q, %v; want b", buf[:n], err)
		}
	})
	t.Run("write deadline", func(t *testing.T) {
		c, _ := pair(t) // the peer never reads: the write fills the buffers and waits
		c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := c.Write(bytes.Repeat([]byte("x"), 64<<20))
		if !isTimeout(err) {
			t.Fatalf("write: %v; want a timeout", err)
		}
	})
}

// TestDeadlineRearmOnlyWhenNeeded: the same timeout set again before every
// read is armed once, not per read, and a shorter one is armed at once.
func TestDeadlineRearmOnlyWhenNeeded(t *testing.T) {
	c, s := pair(t)
	w, ok := s.(*Conn)
	if !ok {
		t.Skip("raw sockets are not used here")
	}
	buf := make([]byte, 8)
	var armed []time.Time
	for i := 0; i < 20; i++ {
		w.SetReadDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("x"))
		if _, err := io.ReadFull(s, buf[:1]); err != nil {
			t.Fatal(err)
		}
		w.dl.mu.Lock()
		a := w.dl.rd.armed
		w.dl.mu.Unlock()
		if len(armed) == 0 || !a.Equal(armed[len(armed)-1]) {
			armed = append(armed, a)
		}
	}
	if len(armed) != 1 {
		t.Fatalf("armed %d times for the same 10 s timeout; want 1", len(armed))
	}
	if slack := armed[0].Sub(time.Now().Add(10 * time.Second)); slack > maxSlack {
		t.Fatalf("armed %v past the wanted deadline; want ≤ %v", slack, maxSlack)
	}
	w.SetReadDeadline(time.Now().Add(time.Second))
	c.Write([]byte("y"))
	if _, err := io.ReadFull(s, buf[:1]); err != nil {
		t.Fatal(err)
	}
	w.dl.mu.Lock()
	a := w.dl.rd.armed
	w.dl.mu.Unlock()
	if until := time.Until(a); until > time.Second+maxSlack || until < 900*time.Millisecond {
		t.Fatalf("a shorter deadline was not armed: %v left; want ~1 s", until)
	}
}

// BenchmarkSetReadDeadline: the same timeout set again before every read,
// as fasthttp's server and client do per request (lazy: no timer update).
func BenchmarkSetReadDeadline(b *testing.B) {
	c, s := pair(b)
	msg, buf := []byte("x"), make([]byte, 1)
	b.ReportAllocs()
	for b.Loop() {
		s.SetReadDeadline(time.Now().Add(10 * time.Second))
		c.Write(msg)
		io.ReadFull(s, buf)
	}
}
