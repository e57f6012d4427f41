package upstream

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestDescribe(t *testing.T) {
	f := func(err error, want string) {
		t.Helper()
		if got := Describe(err); got != want {
			t.Fatalf("Describe(%v) = %q; want %q", err, got, want)
		}
	}
	wrap := func(err error) error { return fmt.Errorf("dial tcp 10.1.2.3:443: %w", err) }
	f(nil, "")
	f(wrap(syscall.ECONNREFUSED), "connection refused")
	f(&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, "connection reset by the upstream")
	f(&net.DNSError{Err: "no such host", Name: "api.example"}, "the upstream host name does not resolve")
	f(wrap(&tls.CertificateVerificationError{Err: errors.New("x509: unknown authority")}), "TLS handshake with the upstream failed")
	f(fasthttp.ErrTimeout, "the upstream did not answer in time")
	f(fasthttp.ErrBodyTooLarge, "the upstream answer is too large")
	f(fasthttp.ErrNoFreeConns, "no free upstream connection")
	f(io.EOF, "the upstream closed the connection before answering")
	f(fmt.Errorf("error when reading response headers: %w", fasthttp.ErrResponseFirstLineMissingSpace), "the upstream's answer is not valid HTTP/1.1")
	f(errors.New(`error when reading response headers: unsupported http version "HTTP/2"`), "the upstream's answer is not valid HTTP/1.1")
	f(errors.New("something internal at 10.0.0.1"), "transport error")
}
