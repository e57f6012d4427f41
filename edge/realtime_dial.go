package edge

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The upstream leg of a Realtime session: an HTTP/1.1 upgrade written by
// hand on a TCP (and TLS) connection gw dials itself, so the relay owns the
// raw connection (deadlines, frame-level relay) once the 101 is read. Runs
// once per session, never per frame.

// wsGUID is RFC 6455's key suffix.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsAccept is the Sec-WebSocket-Accept value of key.
func wsAccept(key []byte) string {
	h := sha1.New()
	h.Write(key)
	h.Write([]byte(wsGUID))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// upstreamStatusError is an upstream that answered the upgrade with a
// status other than 101; gw relays it to the caller.
type upstreamStatusError struct {
	status      int
	contentType string
	body        []byte
}

func (e *upstreamStatusError) Error() string {
	return "upstream answered the upgrade with " + strconv.Itoa(e.status)
}

// maxUpgradeErrorBody bounds the error body relayed from a refused upgrade.
const maxUpgradeErrorBody = 64 << 10

// realtimeDial is one upstream dial: the target URL, the headers to send
// (credential and forwarded ones) and the TLS settings of wss targets.
type realtimeDial struct {
	url     string
	header  http.Header
	tls     *tls.Config // nil: system roots, verified
	timeout time.Duration
}

// dial opens the upstream session and returns its connection and the
// bytes the upstream sent after its 101 (frames already buffered).
func (d *realtimeDial) dial(ctx context.Context) (net.Conn, []byte, error) {
	u, err := url.Parse(d.url)
	if err != nil || u.Host == "" || (u.Scheme != "ws" && u.Scheme != "wss") {
		return nil, nil, errors.New("cannot dial the upstream: not a ws or wss URL")
	}
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "wss" {
			port = "443"
		}
	}
	if d.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.timeout)
		defer cancel()
	}
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, nil, err
	}
	if u.Scheme == "wss" {
		var cfg *tls.Config
		if d.tls != nil {
			cfg = d.tls.Clone()
		} else {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, nil, err
		}
		conn = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	rest, err := d.handshake(conn, u)
	stop()
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, rest, nil
}

func (d *realtimeDial) handshake(conn net.Conn, u *url.URL) ([]byte, error) {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])

	var b strings.Builder
	b.WriteString("GET ")
	b.WriteString(u.RequestURI())
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(u.Host)
	b.WriteString("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ")
	b.WriteString(key)
	b.WriteString("\r\n")
	if u.User != nil && d.header.Get("Authorization") == "" {
		pw, _ := u.User.Password()
		b.WriteString("Authorization: Basic ")
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw)))
		b.WriteString("\r\n")
	}
	for name, vs := range d.header {
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") {
				continue
			}
			b.WriteString(name)
			b.WriteString(": ")
			b.WriteString(v)
			b.WriteString("\r\n")
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, err
	}

	br := bufio.NewReaderSize(conn, 4096)
	req := &http.Request{Method: http.MethodGet, URL: u}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxUpgradeErrorBody))
		resp.Body.Close()
		return nil, &upstreamStatusError{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body}
	}
	switch {
	case !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket"):
		return nil, errors.New("upstream 101 without Upgrade: websocket")
	case !headerHasToken(resp.Header.Values("Connection"), "upgrade"):
		return nil, errors.New("upstream 101 without Connection: upgrade")
	case resp.Header.Get("Sec-WebSocket-Accept") != wsAccept([]byte(key)):
		return nil, errors.New("upstream 101 with a wrong Sec-WebSocket-Accept")
	case resp.Header.Get("Sec-WebSocket-Extensions") != "":
		// gw offered none; frames with extension bits could not be relayed.
		return nil, errors.New("upstream 101 with an extension gw did not offer")
	}
	rest, _ := br.Peek(br.Buffered())
	return append([]byte(nil), rest...), nil
}

// headerHasToken reports whether a comma-separated header holds token
// (case-insensitive).
func headerHasToken(values []string, token string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
