package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/miekg/dns"
)

// TestGatewayNetE2E drives the data plane's network features through the
// binary: WebSocket proxying, TLS by SNI (two certificates, a disabled
// one, ssl_protocols, a rotation through the admin API) and DNS
// discovery against a real DNS server (miekg/dns) with SRV weights and a
// record change picked up after its TTL. One gw process serves every
// subtest.
func TestGatewayNetE2E(t *testing.T) {
	zone := newZone(t)
	tlsAddr := freeAddr(t)
	g := startAdminGW(t, "--data-dir", t.TempDir(), "--gateway-tls-listen", tlsAddr, "--gateway-dns-servers", zone.addr)
	a, b := newBackend(t, "A"), newBackend(t, "B")

	ws := wsEchoBackend(t)
	t.Run("websocket", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/ws", `{"uri":"/ws","enable_websocket":true,"upstream":{"nodes":{"`+ws+`":1}}}`)
		g.want(t, 201, "PUT", "/routes/nows", `{"uri":"/nows","upstream":{"nodes":{"`+a.addr()+`":1}}}`)
		var c *websocket.Conn
		waitFor(t, "websocket route", func() bool {
			var err error
			c, _, err = (&websocket.Dialer{HandshakeTimeout: 2 * time.Second}).Dial("ws://"+strings.TrimPrefix(g.gateway, "http://")+"/ws", nil)
			return err == nil
		})
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, hello, err := c.ReadMessage(); err != nil || string(hello) != "hello 127.0.0.1" {
			t.Fatalf("hello: %q %v", hello, err)
		}
		for _, msg := range []string{"one", strings.Repeat("x", 100000)} {
			if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			if _, got, err := c.ReadMessage(); err != nil || string(got) != "echo:"+msg {
				t.Fatalf("echo of %d bytes: %d bytes, %v", len(msg), len(got), err)
			}
		}
		if err := c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
			t.Errorf("close: %v", err)
		}
		// Without enable_websocket the request is proxied as plain HTTP.
		if code, body := g.get(t, "GET", "/nows", "Upgrade", "websocket", "Connection", "Upgrade"); code != 200 || !strings.HasPrefix(body, "A GET") {
			t.Errorf("upgrade on a route without enable_websocket: %d %s", code, body)
		}
	})

	t.Run("tls by sni", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/tls", `{"uri":"/tls","upstream":{"nodes":{"`+a.addr()+`":1}}}`)
		g.want(t, 201, "PUT", "/routes/wss", `{"uri":"/wss","enable_websocket":true,"upstream":{"nodes":{"`+ws+`":1}}}`)
		roots := x509.NewCertPool()
		put := func(id, cn string, extra string, snis ...string) {
			cert, key := genCert(t, cn, snis...)
			blk, _ := pem.Decode([]byte(cert))
			c, _ := x509.ParseCertificate(blk.Bytes)
			roots.AddCert(c)
			sn, _ := json.Marshal(snis)
			code, m := g.call(t, "PUT", "/ssls/"+id, `{"snis":`+string(sn)+`,"cert":`+jsonStr(cert)+`,"key":`+jsonStr(key)+extra+`}`)
			if code != 200 && code != 201 {
				t.Fatalf("PUT ssl %s: %d %v", id, code, m)
			}
		}
		put("1", "wild-a", "", "*.a.test")
		put("2", "b", "", "b.test")
		put("3", "off", `,"status":0`, "off.test")
		put("4", "v13", `,"ssl_protocols":["TLSv1.3"]`, "v13.test")
		get := func(sni string, maxVer uint16) (string, string, error) {
			tr := &http.Transport{TLSClientConfig: &tls.Config{ServerName: sni, RootCAs: roots, MaxVersion: maxVer}}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + tlsAddr + "/tls")
			if err != nil {
				return "", "", err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.TLS.PeerCertificates[0].Subject.CommonName, string(body), nil
		}
		waitFor(t, "certificates served", func() bool { cn, _, _ := get("b.test", 0); return cn == "b" })
		cn, body, err := get("x.a.test", 0)
		if err != nil || cn != "wild-a" || !strings.HasPrefix(body, "A GET") {
			t.Errorf("x.a.test: %q %q %v", cn, body, err)
		}
		if _, _, err := get("off.test", 0); err == nil {
			t.Error("status 0 certificate served")
		}
		if _, _, err := get("c.test", 0); err == nil {
			t.Error("unknown SNI served")
		}
		if cn, _, err := get("v13.test", 0); err != nil || cn != "v13" {
			t.Errorf("v13.test over TLS 1.3: %q %v", cn, err)
		}
		if _, _, err := get("v13.test", tls.VersionTLS12); err == nil {
			t.Error("ssl_protocols TLSv1.3 accepted a TLS 1.2 client")
		}
		// Rotation mid-run: the next handshake gets the new certificate,
		// on the same listener.
		put("2", "b-rotated", "", "b.test")
		waitFor(t, "rotated certificate", func() bool { cn, _, _ := get("b.test", 0); return cn == "b-rotated" })
		// WebSocket over TLS through the same listener.
		d := &websocket.Dialer{HandshakeTimeout: 5 * time.Second, TLSClientConfig: &tls.Config{ServerName: "b.test", RootCAs: roots}}
		c, resp, err := d.Dial("wss://"+tlsAddr+"/wss", nil)
		if err != nil {
			if resp != nil {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("wss: %v: %d %s", err, resp.StatusCode, b)
			}
			t.Fatalf("wss: %v", err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, hello, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(hello), "hello ") {
			t.Errorf("wss hello: %q %v", hello, err)
		}
	})

	t.Run("dns discovery", func(t *testing.T) {
		pa, pb := portOf(a.addr()), portOf(b.addr())
		zone.set(t,
			"_web._tcp.svc.test. 1 IN SRV 10 3 "+pa+" a.svc.test.",
			"_web._tcp.svc.test. 1 IN SRV 10 1 "+pb+" b.svc.test.",
			"a.svc.test. 1 IN A 127.0.0.1",
			"b.svc.test. 1 IN A 127.0.0.1",
			"api.svc.test. 1 IN A 127.0.0.1",
		)
		g.want(t, 201, "PUT", "/upstreams/srv", `{"discovery_type":"dns","service_name":"_web._tcp.svc.test","type":"roundrobin"}`)
		g.want(t, 201, "PUT", "/routes/srv", `{"uri":"/srv","upstream_id":"srv"}`)
		g.want(t, 201, "PUT", "/routes/api", `{"uri":"/api","upstream":{"discovery_type":"dns","service_name":"api.svc.test:`+pb+`"}}`)
		g.want(t, 201, "PUT", "/routes/consul", `{"uri":"/consul","upstream":{"discovery_type":"consul","service_name":"web"}}`)
		g.served(t, "/srv", "")
		g.served(t, "/api", "B GET")
		n := map[string]int{}
		for i := 0; i < 40; i++ {
			code, body := g.get(t, "GET", "/srv")
			if code != 200 {
				t.Fatalf("/srv: %d %s", code, body)
			}
			n[body[:1]]++
		}
		if n["A"] != 30 || n["B"] != 10 {
			t.Errorf("SRV weights 3:1 over 40 requests: %v", n)
		}
		// The record changes; it is picked up once its 1 s TTL ran out.
		zone.set(t, "api.svc.test. 1 IN A 127.0.0.1", "_web._tcp.svc.test. 1 IN SRV 10 1 "+pb+" b.svc.test.", "b.svc.test. 1 IN A 127.0.0.1")
		changed := time.Now()
		waitFor(t, "SRV change", func() bool {
			for i := 0; i < 4; i++ {
				if _, body := g.get(t, "GET", "/srv"); !strings.HasPrefix(body, "B ") {
					return false
				}
			}
			return true
		})
		if d := time.Since(changed); d > 4*time.Second {
			t.Errorf("record change served after %v; the TTL is 1 s", d)
		}
		// The DNS server failing keeps the last good nodes.
		const failed = "dns discovery failed; keeping the last nodes"
		before := strings.Count(g.stderr.String(), failed)
		zone.fail(true)
		waitFor(t, "a failed refresh", func() bool { return strings.Count(g.stderr.String(), failed) > before })
		if code, body := g.get(t, "GET", "/srv"); code != 200 || !strings.HasPrefix(body, "B ") {
			t.Errorf("while DNS fails: %d %s; want the last good nodes", code, body)
		}
		zone.fail(false)
		if code, body := g.get(t, "GET", "/consul"); code != 503 {
			t.Errorf("discovery_type consul: %d %s; want 503", code, body)
		}
		if !strings.Contains(g.stderr.String(), `discovery_type \"consul\" is not built`) {
			t.Errorf("the consul route's reason is not logged")
		}
	})
}

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

func jsonStr(s string) string { b, _ := json.Marshal(s); return string(b) }

// wsEchoBackend is a real WebSocket server that greets with the client
// address it was given and echoes every message.
func wsEchoBackend(t *testing.T) string {
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.WriteMessage(websocket.TextMessage, []byte("hello "+r.Header.Get("X-Forwarded-For")))
		for {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if c.WriteMessage(typ, append([]byte("echo:"), msg...)) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// genCert returns a self-signed PEM certificate and key for names.
func genCert(t *testing.T, cn string, names ...string) (string, string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalPKCS8PrivateKey(k)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}))
}

// zone is a real DNS server (miekg/dns) answering from records the test
// sets, with A records of SRV targets in the additional section.
type zone struct {
	addr    string
	mu      sync.Mutex
	rrs     []dns.RR
	failing bool
}

func newZone(t *testing.T) *zone {
	z := &zone{}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z.addr = pc.LocalAddr().String()
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(z.serve)}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return z
}

func (z *zone) set(t *testing.T, records ...string) {
	var rrs []dns.RR
	for _, r := range records {
		rr, err := dns.NewRR(r)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		rrs = append(rrs, rr)
	}
	z.mu.Lock()
	z.rrs = rrs
	z.mu.Unlock()
}

func (z *zone) fail(on bool) {
	z.mu.Lock()
	z.failing = on
	z.mu.Unlock()
}

func (z *zone) serve(w dns.ResponseWriter, req *dns.Msg) {
	z.mu.Lock()
	defer z.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(req)
	if z.failing {
		m.Rcode = dns.RcodeServerFailure
		w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	known := false
	for _, rr := range z.rrs {
		if !strings.EqualFold(rr.Header().Name, q.Name) {
			continue
		}
		known = true
		if rr.Header().Rrtype != q.Qtype {
			continue
		}
		m.Answer = append(m.Answer, rr)
		if s, ok := rr.(*dns.SRV); ok {
			for _, x := range z.rrs {
				if strings.EqualFold(x.Header().Name, s.Target) && x.Header().Rrtype == dns.TypeA {
					m.Extra = append(m.Extra, x)
				}
			}
		}
	}
	if !known {
		m.Rcode = dns.RcodeNameError
	}
	w.WriteMsg(m)
}
