package upstream

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

const fakeHost = "api.fake.test"

var loopback = netip.MustParseAddr("127.0.0.1")

// testCA is a CA and a server certificate for fakeHost signed by it.
type testCA struct {
	pem    string // CA certificate
	pool   *x509.CertPool
	server tls.Certificate
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gw test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: fakeHost},
		DNSNames:     []string{fakeHost},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))}
	ca.pool = x509.NewCertPool()
	ca.pool.AddCert(caCert)
	ca.server = tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}
	return ca
}

// testServer is an HTTP/1.1 server on 127.0.0.1, optionally TLS, that
// records the SNI and Host of what it serves.
type testServer struct {
	port  int
	sni   atomic.Value // string
	host  atomic.Value // string
	conns atomic.Int64
	srv   *http.Server
}

func startServer(t *testing.T, ca *testCA, h http.HandlerFunc) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{port: ln.Addr().(*net.TCPAddr).Port}
	s.srv = &http.Server{
		ErrorLog: log.New(io.Discard, "", 0), // handshake failures are expected in TestTLSVerify
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.host.Store(r.Host)
			h(w, r)
		}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		},
	}
	if ca != nil {
		ln = tls.NewListener(ln, &tls.Config{
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				s.sni.Store(hello.ServerName)
				return &ca.server, nil
			},
		})
	}
	go s.srv.Serve(ln)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

func okHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"echo":` + strconv.Quote(string(body)) + `}`))
}

func post(t *testing.T, c *Client, url string) (*fasthttp.Response, error) {
	t.Helper()
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod("POST")
	req.SetRequestURI(url)
	req.SetBodyString(`{"x":1}`)
	resp := fasthttp.AcquireResponse()
	err := c.Do(req, resp, 5*time.Second)
	return resp, err
}

func TestTLSCustomCAAndResolveAddresses(t *testing.T) {
	ca := newTestCA(t)
	s := startServer(t, ca, okHandler)
	base := "https://" + fakeHost + ":" + strconv.Itoa(s.port) + "/v1"
	p := NewPool(Options{})
	c, err := p.Client(Target{BaseURL: base, TLS: TLS{CACert: ca.pem, CAPool: ca.pool, Verify: true},
		ResolveAddresses: []netip.Addr{loopback}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := post(t, c, base+"/chat/completions")
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer fasthttp.ReleaseResponse(resp)
	if resp.StatusCode() != 200 || string(resp.Body()) != `{"echo":"{\"x\":1}"}` {
		t.Fatalf("got %d %s", resp.StatusCode(), resp.Body())
	}
	if sni := s.sni.Load(); sni != fakeHost {
		t.Fatalf("SNI %q; want %q", sni, fakeHost)
	}
	if host := s.host.Load(); host != fakeHost+":"+strconv.Itoa(s.port) {
		t.Fatalf("Host %q", host)
	}
	// The connection is kept alive and reused.
	for range 3 {
		r, err := post(t, c, base+"/chat/completions")
		if err != nil {
			t.Fatal(err)
		}
		fasthttp.ReleaseResponse(r)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections; want 1 (keep-alive)", n)
	}
}

func TestTLSVerify(t *testing.T) {
	ca := newTestCA(t)
	s := startServer(t, ca, okHandler)
	base := "https://" + fakeHost + ":" + strconv.Itoa(s.port)
	p := NewPool(Options{})

	// System roots do not know the test CA.
	strict, _ := p.Client(Target{BaseURL: base, TLS: TLS{Verify: true}, ResolveAddresses: []netip.Addr{loopback}})
	_, err := post(t, strict, base+"/x")
	var uae x509.UnknownAuthorityError
	if !errors.As(err, &uae) || Classify(err, 0) != KindTransport {
		t.Fatalf("got %v (%v); want unknown authority, transport", err, Classify(err, 0))
	}
	// tls.verify: false accepts it.
	loose, _ := p.Client(Target{BaseURL: base, TLS: TLS{Verify: false}, ResolveAddresses: []netip.Addr{loopback}})
	if loose == strict {
		t.Fatal("verify true and false share a client")
	}
	resp, err := post(t, loose, base+"/x")
	if err != nil || resp.StatusCode() != 200 {
		t.Fatalf("verify false: %v", err)
	}
}

func TestResolveAddressesOrder(t *testing.T) {
	s := startServer(t, nil, okHandler)
	base := "http://" + fakeHost + ":" + strconv.Itoa(s.port)
	p := NewPool(Options{})
	// 127.0.0.2 is loopback too but nothing listens there: refused, then
	// the next address is tried.
	c, _ := p.Client(Target{BaseURL: base, ResolveAddresses: []netip.Addr{netip.MustParseAddr("127.0.0.2"), loopback}})
	resp, err := post(t, c, base+"/x")
	if err != nil || resp.StatusCode() != 200 {
		t.Fatalf("got %v", err)
	}
	if host := s.host.Load(); host != fakeHost+":"+strconv.Itoa(s.port) {
		t.Fatalf("Host %q; want the URL's host", host)
	}
}

func TestDialThroughDNSCache(t *testing.T) {
	s := startServer(t, nil, okHandler)
	r := &fakeResolver{addrs: map[string][]netip.Addr{fakeHost: {loopback}}}
	p := NewPool(Options{DNS: NewDNSCache(DNSOptions{Lookup: r.Lookup}), MaxIdleConnDuration: time.Millisecond})
	base := "http://" + fakeHost + ":" + strconv.Itoa(s.port)
	c, _ := p.Client(Target{BaseURL: base})
	for range 3 {
		resp, err := post(t, c, base+"/x")
		if err != nil || resp.StatusCode() != 200 {
			t.Fatalf("got %v", err)
		}
		c.HostClient().CloseIdleConnections() // force a new dial
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("resolver calls %d; want 1 (cached)", n)
	}
	bad, _ := p.Client(Target{BaseURL: "http://nowhere.test:1"})
	_, err := post(t, bad, "http://nowhere.test:1/x")
	if !errors.Is(err, ErrNoAddresses) || Classify(err, 0) != KindTransport {
		t.Fatalf("got %v; want ErrNoAddresses, transport", err)
	}
}

func TestPoolSharing(t *testing.T) {
	p := NewPool(Options{})
	get := func(tg Target) *Client {
		t.Helper()
		c, err := p.Client(tg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := get(Target{BaseURL: "https://api.openai.com/v1", TLS: TLS{Verify: true}})
	if b := get(Target{BaseURL: "https://API.openai.com:443/other", TLS: TLS{Verify: true}}); b != a {
		t.Fatalf("same origin got two clients: %q %q", a.Key(), b.Key())
	}
	if b := get(Target{BaseURL: "https://user:secret@api.openai.com/v1", TLS: TLS{Verify: true}}); b != a || strings.Contains(b.Key(), "secret") {
		t.Fatalf("user-info must neither split nor enter the key: %q", b.Key())
	}
	for _, tg := range []Target{
		{BaseURL: "https://api.openai.com/v1"}, // verify false
		{BaseURL: "https://api.openai.com/v1", TLS: TLS{Verify: true, CACert: "x"}},
		{BaseURL: "https://api.openai.com/v1", TLS: TLS{Verify: true}, ResolveAddresses: []netip.Addr{loopback}},
		{BaseURL: "http://api.openai.com/v1"},
		{BaseURL: "https://api.openai.com:8443/v1", TLS: TLS{Verify: true}},
	} {
		if b := get(tg); b == a {
			t.Fatalf("%+v shares %q", tg, a.Key())
		}
	}
	if _, err := p.Client(Target{BaseURL: "ftp://x"}); !errors.Is(err, ErrBadTarget) {
		t.Fatalf("got %v; want ErrBadTarget", err)
	}
	before := p.Len()
	if n := p.Sweep(0); n != before || p.Len() != 0 {
		t.Fatalf("Sweep(0) dropped %d of %d clients", n, before)
	}
	if n := NewPool(Options{}).Sweep(time.Hour); n != 0 {
		t.Fatalf("Sweep on an empty pool dropped %d", n)
	}
}

// TestStreamGapTimeout: headers and one chunk, then the server stalls; a
// read after SetReadDeadline fails with a timeout. Over TLS too.
func TestStreamGapTimeout(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run("tls="+strconv.FormatBool(useTLS), func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			var ca *testCA
			if useTLS {
				ca = newTestCA(t)
			}
			s := startServer(t, ca, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write([]byte("data: {\"n\":1}\n\n"))
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
				}
			})
			scheme := "http"
			if useTLS {
				scheme = "https"
			}
			base := scheme + "://" + fakeHost + ":" + strconv.Itoa(s.port)
			p := NewPool(Options{})
			c, _ := p.Client(Target{BaseURL: base, TLS: TLS{CAPool: testPool(ca), CACert: "ca", Verify: true},
				ResolveAddresses: []netip.Addr{loopback}})

			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			req.Header.SetMethod("POST")
			req.SetRequestURI(base + "/v1/chat/completions")
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(resp)
			if err := c.DoStream(req, resp, 5*time.Second); err != nil {
				t.Fatalf("DoStream: %v", err)
			}
			defer resp.CloseBodyStream()
			if _, ok := resp.RemoteAddr().(*ConnAddr); !ok {
				t.Fatalf("RemoteAddr is %T; want *ConnAddr", resp.RemoteAddr())
			}
			br := bufio.NewReader(resp.BodyStream())
			if !SetReadDeadline(resp, time.Now().Add(2*time.Second)) {
				t.Fatal("SetReadDeadline reported false")
			}
			line, err := br.ReadString('\n')
			if err != nil || line != "data: {\"n\":1}\n" {
				t.Fatalf("first chunk %q, %v", line, err)
			}
			br.ReadString('\n')

			start := time.Now()
			SetReadDeadline(resp, start.Add(150*time.Millisecond))
			_, err = br.ReadString('\n')
			el := time.Since(start)
			if err == nil || !IsTimeout(err) || Classify(err, 0) != KindTimeout {
				t.Fatalf("got %v (%v); want a timeout", err, Classify(err, 0))
			}
			if el < 100*time.Millisecond || el > 3*time.Second {
				t.Fatalf("timed out after %v; want about 150ms", el)
			}
		})
	}
}

func testPool(ca *testCA) *x509.CertPool {
	if ca == nil {
		return nil
	}
	return ca.pool
}

func TestSetReadDeadlineForeignResponse(t *testing.T) {
	var resp fasthttp.Response
	if SetReadDeadline(&resp, time.Now()) {
		t.Fatal("true for a response without a *ConnAddr")
	}
}

// TestStaleIdleRetry: the server closes a keep-alive connection while it is
// idle, without saying so; the next request lands on it, fails before any
// response byte, and is resent once on a fresh connection.
func TestStaleIdleRetry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				var req fasthttp.Request
				if err := req.Read(br); err != nil {
					return
				}
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"))
				// Close without Connection: close, as an idle timeout does.
			})
		}
	}()
	base := "http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	p := NewPool(Options{})
	c, _ := p.Client(Target{BaseURL: base})
	resp, err := post(t, c, base+"/x")
	if err != nil {
		t.Fatalf("first: %v", err)
	}
	fasthttp.ReleaseResponse(resp)
	time.Sleep(50 * time.Millisecond) // the server has closed it by now
	resp, err = post(t, c, base+"/x")
	if err != nil || resp.StatusCode() != 200 {
		t.Fatalf("second: %v", err)
	}
	fasthttp.ReleaseResponse(resp)
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections; want 2", n)
	}
}

func TestClassify(t *testing.T) {
	f := func(err error, status int, want ErrorKind) {
		t.Helper()
		if got := Classify(err, status); got != want {
			t.Fatalf("Classify(%v, %d) = %v; want %v", err, status, got, want)
		}
	}
	f(nil, 200, KindOK)
	f(nil, 302, KindOK)
	f(nil, 429, KindStatus)
	f(nil, 503, KindStatus)
	f(fasthttp.ErrTimeout, 0, KindTimeout)
	f(fasthttp.ErrDialTimeout, 0, KindTimeout)
	f(fasthttp.ErrTLSHandshakeTimeout, 0, KindTimeout)
	f(context.DeadlineExceeded, 0, KindTimeout)
	f(&net.OpError{Op: "read", Err: errTimeoutish{}}, 0, KindTimeout)
	f(fasthttp.ErrNoFreeConns, 0, KindBusy)
	f(fasthttp.ErrConnectionClosed, 0, KindTransport)
	f(io.EOF, 0, KindTransport)
	f(&net.OpError{Op: "dial", Err: errors.New("connection refused")}, 0, KindTransport)

	// A real refused connection.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	c, _ := NewPool(Options{}).Client(Target{BaseURL: "http://" + addr})
	_, err := post(t, c, "http://"+addr+"/x")
	f(err, 0, KindTransport)

	// A server that never answers, against a request timeout.
	s := startServer(t, nil, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c, _ = NewPool(Options{}).Client(Target{BaseURL: "http://127.0.0.1:" + strconv.Itoa(s.port)})
	req := fasthttp.AcquireRequest()
	req.SetRequestURI("http://127.0.0.1:" + strconv.Itoa(s.port) + "/x")
	req.Header.SetMethod("POST")
	resp := fasthttp.AcquireResponse()
	err = c.Do(req, resp, 100*time.Millisecond)
	f(err, 0, KindTimeout)
	if KindStatus.String() != "status" || ErrorKind(99).String() != "unknown" {
		t.Fatal("ErrorKind names")
	}
}

type errTimeoutish struct{}

func (errTimeoutish) Error() string   { return "i/o timeout" }
func (errTimeoutish) Timeout() bool   { return true }
func (errTimeoutish) Temporary() bool { return true }

// TestDeploymentTLS: upstream.tls.ca_cert is trusted by every target (in
// addition to its own CAs) and upstream.tls.verify false checks no
// certificate, whatever a target's own tls.verify says.
func TestDeploymentTLS(t *testing.T) {
	ca := newTestCA(t)
	s := startServer(t, ca, okHandler)
	base := "https://" + fakeHost + ":" + strconv.Itoa(s.port)
	call := func(name string, p *Pool, tl TLS, wantOK bool) {
		t.Helper()
		c, err := p.Client(Target{BaseURL: base, TLS: tl, ResolveAddresses: []netip.Addr{loopback}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := post(t, c, base+"/x")
		if wantOK && (err != nil || resp.StatusCode() != 200) {
			t.Fatalf("%s: %v", name, err)
		}
		if !wantOK && err == nil {
			t.Fatalf("%s: the unknown certificate was accepted", name)
		}
		if err == nil {
			fasthttp.ReleaseResponse(resp)
		}
	}
	withCA := NewPool(Options{CACertPEM: []byte(ca.pem)})
	call("deployment CA, system roots", withCA, TLS{Verify: true}, true)
	other := newTestCA(t)
	call("deployment CA next to the key's own", withCA, TLS{Verify: true, CACert: other.pem, CAPool: testPool(other)}, true)
	call("no deployment CA", NewPool(Options{}), TLS{Verify: true}, false)
	call("deployment verify false", NewPool(Options{InsecureSkipVerify: true}), TLS{Verify: true}, true)
}

// TestStaleIdleNoResendOfStream: a request whose body is a stream is not
// resent when it lands on a stale keep-alive connection: fasthttp drops the
// stream once it is written, so a resend would go out with an empty body.
func TestStaleIdleNoResendOfStream(t *testing.T) {
	base, bodiesOf := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
	c, _ := NewPool(Options{}).Client(Target{BaseURL: base})
	var errs []error
	for range 2 {
		req := fasthttp.AcquireRequest()
		req.Header.SetMethod("POST")
		req.SetRequestURI(base + "/x")
		req.SetBodyStream(strings.NewReader("hello"), 5)
		resp := fasthttp.AcquireResponse()
		errs = append(errs, c.Do(req, resp, 5*time.Second))
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		time.Sleep(50 * time.Millisecond) // the server has closed it by now
	}
	if errs[0] != nil || errs[1] == nil || Classify(errs[1], 0) != KindTransport {
		t.Fatalf("errors %v; want the second to fail (transport)", errs)
	}
	if bodies := bodiesOf(); len(bodies) != 1 || bodies[0] != "hello" {
		t.Fatalf("server read bodies %q; want only the first", bodies)
	}
}
