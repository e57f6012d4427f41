package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/valyala/fasthttp"
)

// ErrorKind is the class of an upstream call's outcome, for retry, cooldown
// and status mapping.
type ErrorKind uint8

// Outcome classes.
const (
	// KindOK: no error and a status below 400.
	KindOK ErrorKind = iota
	// KindTimeout: a deadline passed (dial, TLS handshake, write, headers,
	// a buffered body, or a stream gap). Maps to 504; cooldown
	// trigger_on_timeout.
	KindTimeout
	// KindTransport: the exchange failed without a usable answer —
	// connection refused or reset, EOF before the headers, DNS failure, TLS
	// failure, malformed response. Maps to 502; cooldown
	// trigger_on_transport.
	KindTransport
	// KindBusy: gw's own connection limit to the host (MaxConnsPerHost) was
	// reached; the upstream was not contacted. Maps to 503; not the
	// upstream's fault, so it should not trigger cooldown.
	KindBusy
	// KindStatus: the upstream answered with a status >= 400; the status
	// decides (retryable 5xx, 429, fallback_on_statuses, cooldown statuses).
	KindStatus
)

var kindNames = [...]string{"ok", "timeout", "transport", "busy", "status"}

// String returns the lower-case name of k.
func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Classify returns the class of an upstream call that returned err with
// response status (ignored when err is not nil).
func Classify(err error, status int) ErrorKind {
	if err == nil {
		if status >= 400 {
			return KindStatus
		}
		return KindOK
	}
	if errors.Is(err, fasthttp.ErrNoFreeConns) {
		return KindBusy
	}
	if IsTimeout(err) {
		return KindTimeout
	}
	return KindTransport
}

// IsTimeout reports whether err is a deadline error of any layer.
func IsTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.Is(err, fasthttp.ErrTLSHandshakeTimeout) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Describe names the failure of an upstream exchange in words fit for a
// caller: a fixed phrase per class, never the library's error text (which
// carries addresses and internals; log that separately).
func Describe(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var alert tls.AlertError
	var recErr tls.RecordHeaderError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return "the upstream answer is too large"
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return "no free upstream connection"
	case IsTimeout(err):
		return "the upstream did not answer in time"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset by the upstream"
	case errors.As(err, &dnsErr):
		return "the upstream host name does not resolve"
	case errors.As(err, &certErr), errors.As(err, &alert), errors.As(err, &recErr):
		return "TLS handshake with the upstream failed"
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the upstream closed the connection before answering"
	case malformed(err):
		return "the upstream's answer is not valid HTTP/1.1"
	}
	return "transport error"
}

// malformed reports whether err is fasthttp's for an answer head it cannot
// parse. Not all of those wrap one of its error values (an unsupported
// HTTP version does not), but all carry the same words.
func malformed(err error) bool {
	for _, e := range malformedHead {
		if errors.Is(err, e) {
			return true
		}
	}
	return strings.Contains(err.Error(), "error when reading response headers")
}

var malformedHead = []error{
	fasthttp.ErrReadingResponseHeaders, fasthttp.ErrResponseFirstLineMissingSpace, fasthttp.ErrUnexpectedStatusCodeChar,
	fasthttp.ErrNonNumericChars, fasthttp.ErrDuplicateContentLength, fasthttp.ErrUnsupportedTransferEncoding,
}
