package fuzz

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"gw/edge/gateway"
	"gw/edge/gateway/tlsmap"
	"gw/edge/gateway/upstream"
)

// FuzzGatewaySNIPattern: an SNI pattern either is refused or yields a
// lowercase key that a name under it finds in a map built from it.
func FuzzGatewaySNIPattern(f *testing.F) {
	for _, s := range []string{"a.test", "*.Example.com", "*.", "*", "a.*.b", "", "x.y.", strings.Repeat("a", 300)} {
		f.Add(s, "www.example.com")
	}
	f.Fuzz(func(t *testing.T, pattern, sni string) {
		key, wild, ok := tlsmap.Pattern(pattern)
		if !ok {
			return
		}
		if key != strings.ToLower(key) || key == "" || len(key) > tlsmap.MaxSNI {
			t.Fatalf("%q: key %q", pattern, key)
		}
		if wild && key[0] != '.' {
			t.Fatalf("%q: wildcard key %q without its dot", pattern, key)
		}
		m := tlsmap.NewTestMap(key, wild)
		m.Lookup(sni)
		name := key
		if wild {
			name = "x" + key
		}
		if len(name) <= tlsmap.MaxSNI && m.Lookup(strings.ToUpper(name)) == nil && !strings.HasSuffix(name, ".") {
			t.Fatalf("%q: %q not found", pattern, name)
		}
	})
}

// FuzzGatewayDNSAnswer: any DNS message that unpacks turns into nodes
// with valid addresses and ports, without panicking.
func FuzzGatewayDNSAnswer(f *testing.F) {
	for _, z := range [][]string{
		{"_w._tcp.s. 30 IN SRV 10 3 8001 a.s.", "_w._tcp.s. 30 IN SRV 20 1 8002 b.s.", "a.s. 5 IN A 127.0.0.1"},
		{"x. 9 IN AAAA ::1", "x. 0 IN A 10.0.0.1"},
		{"_w._tcp.s. 1 IN SRV 0 0 0 ."},
	} {
		m := new(dns.Msg)
		m.SetQuestion("x.", dns.TypeSRV)
		for i, r := range z {
			rr, _ := dns.NewRR(r)
			if i == len(z)-1 && len(z) > 2 {
				m.Extra = append(m.Extra, rr)
			} else {
				m.Answer = append(m.Answer, rr)
			}
		}
		b, _ := m.Pack()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := new(dns.Msg)
		if m.Unpack(data) != nil {
			return
		}
		recs, _ := upstream.SRVRecords(m.Answer)
		for _, s := range recs {
			if s.Port == 0 || s.Priority != recs[0].Priority {
				t.Fatalf("SRV record %v kept", s)
			}
			nodes, _ := upstream.AddrNodes(m.Extra, s.Target, int(s.Port), 1)
			for _, n := range nodes {
				if n.Port < 1 || n.Host == "" || !strings.HasSuffix(n.Addr, ":"+itoa(n.Port)) {
					t.Fatalf("node %+v", n)
				}
			}
		}
		nodes, _ := upstream.AddrNodes(m.Answer, "", 80, 1)
		for i := 1; i < len(nodes); i++ {
			if nodes[i].Addr <= nodes[i-1].Addr {
				t.Fatalf("nodes not sorted and unique: %v", nodes)
			}
		}
	})
}

// FuzzGatewayServiceName: a service_name parses into a host and a valid
// port, or is refused.
func FuzzGatewayServiceName(f *testing.F) {
	for _, s := range []string{"a.test:80", "_sip._tcp.x", "[::1]:81", "a:0", "bad name", "", "a.test.:65535", "x:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, err := upstream.ParseServiceName(s)
		if err != nil {
			return
		}
		if host == "" || port < 0 || port > 65535 {
			t.Fatalf("%q: host %q port %d", s, host, port)
		}
	})
}

// FuzzGatewayUpgradeResponse: the WebSocket upgrade answer reader returns
// a prefix of its input ending in a blank line with a 3-digit status, or
// an error.
func FuzzGatewayUpgradeResponse(f *testing.F) {
	for _, s := range []string{"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nxx", "HTTP/1.0 404\n\n", "HTTP/1.1 1x1\r\n\r\n", "HTTP/1.1 200 OK\r\nA: b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		head, status, err := gateway.ReadUpgradeResponse(bufio.NewReaderSize(bytes.NewReader(data), 16), 1<<10)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(data, head) || status < 100 || status > 999 || !bytes.HasSuffix(head, []byte("\n")) {
			t.Fatalf("%q: head %q status %d", data, head, status)
		}
	})
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		if i /= 10; i == 0 {
			return string(b[n:])
		}
	}
}
