package api

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestUnsupportedMethods(t *testing.T) {
	e := newEnv(t, stores[0].open)
	for _, c := range []struct{ method, path, kind string }{
		{"POST", "/gw/admin/consumers", "consumer"},
		{"PATCH", "/gw/admin/consumers/jack", "consumer"},
		{"POST", "/gw/admin/consumers/jack/credentials", "credential"},
		{"PATCH", "/gw/admin/consumers/jack/credentials/c1", "credential"},
		{"POST", "/gw/admin/plugin_configs", "plugin config"},
		{"POST", "/gw/admin/global_rules", "global rule"},
		{"POST", "/gw/admin/plugin_metadata", "plugin metadata"},
		{"PATCH", "/gw/admin/plugin_metadata/http-logger", "plugin metadata"},
		{"PATCH", "/gw/admin/stream_routes/1", "stream route"},
		{"POST", "/gw/admin/secrets/vault", "secret"},
		{"PATCH", "/gw/admin/routes", "route"},
		{"DELETE", "/gw/admin/upstreams", "upstream"},
		{"POST", "/gw/admin/schema/route", "schema"},
	} {
		r := e.do(c.method, c.path, `{}`)
		if r.code != 405 || r.str("error_msg") != "not supported `"+c.method+"` method for "+c.kind {
			t.Errorf("%s %s: got %d %s", c.method, c.path, r.code, r.body)
		}
	}
}

func TestConsumersAndCredentials(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		r := e.must(201, "PUT", "/gw/admin/consumers", `{"username":"jack","plugins":{"key-auth":{"key":"k-jack"},"limit-count":{"count":5,"time_window":60}}}`)
		if r.str("key") != "/gw/consumers/jack" || r.str("value", "username") != "jack" {
			t.Fatalf("consumer answer %s", r.body)
		}
		e.must(200, "PUT", "/gw/admin/consumers/jack", `{"plugins":{"key-auth":{"key":"k-jack"}}}`)
		e.fails(400, "wrong consumer id", "PUT", "/gw/admin/consumers/jack", `{"username":"jill"}`)
		e.fails(400, "missing consumer id", "PUT", "/gw/admin/consumers", `{"plugins":{}}`)
		e.fails(400, `failed to check the configuration of plugin key-auth err: property "key" is required`, "PUT", "/gw/admin/consumers/x", `{"plugins":{"key-auth":{}}}`)
		e.fails(400, "duplicate key found with consumer: jack", "PUT", "/gw/admin/consumers/jill", `{"plugins":{"key-auth":{"key":"k-jack"}}}`)
		e.must(201, "PUT", "/gw/admin/consumers/jill", `{}`)

		c := e.must(201, "PUT", "/gw/admin/consumers/jack/credentials/c1", `{"plugins":{"basic-auth":{"username":"jack","password":"pw"}}}`)
		if c.str("key") != "/gw/consumers/jack/credentials/c1" || c.str("value", "id") != "c1" {
			t.Fatalf("credential answer %s", c.body)
		}
		e.must(201, "PUT", "/gw/admin/consumers/jack/credentials", `{"id":"c2","plugins":{"key-auth":{"key":"k-jack-2"}}}`)
		e.fails(400, "duplicate key found with consumer: jack", "PUT", "/gw/admin/consumers/jill/credentials/c1", `{"plugins":{"key-auth":{"key":"k-jack-2"}}}`)
		e.fails(400, "duplicate key found with consumer: jack", "PUT", "/gw/admin/consumers/jill", `{"plugins":{"key-auth":{"key":"k-jack-2"}}}`)
		e.fails(400, "failed to fetch consumer info by consumer id [nobody], response code: 404", "PUT", "/gw/admin/consumers/nobody/credentials/c1", `{"plugins":{"key-auth":{"key":"zz"}}}`)
		// An empty basic-auth password is refused at configuration time.
		e.fails(400, `property "password" validation failed: string too short`, "PUT", "/gw/admin/consumers/jill/credentials/b", `{"plugins":{"basic-auth":{"username":"jill","password":""}}}`)
		// Credentials carry auth plugins only.
		e.fails(400, "unknown plugin [limit-count]", "PUT", "/gw/admin/consumers/jill/credentials/b", `{"plugins":{"limit-count":{"count":1,"time_window":1}}}`)
		e.fails(400, "wrong credential id", "PUT", "/gw/admin/consumers/jill/credentials/b", `{"id":"c","plugins":{"key-auth":{"key":"zz"}}}`)

		list := e.must(200, "GET", "/gw/admin/consumers", "")
		if list.str("total") != "2" {
			t.Fatalf("consumer list holds credentials: %s", list.body)
		}
		creds := e.must(200, "GET", "/gw/admin/consumers/jack/credentials", "")
		if creds.str("total") != "2" || creds.str("list", "0", "key") != "/gw/consumers/jack/credentials/c1" {
			t.Fatalf("credential list %s", creds.body)
		}
		e.must(200, "GET", "/gw/admin/consumers/jack/credentials/c2", "")
		snap := e.holder.Load()
		if snap.Auth["key-auth"]["k-jack"].Username != "jack" || snap.Auth["key-auth"]["k-jack-2"].Username != "jack" || snap.Auth["basic-auth"]["jack"].Username != "jack" {
			t.Fatalf("auth index %+v", snap.Auth)
		}
		// Deleting a consumer removes its credentials.
		e.must(200, "DELETE", "/gw/admin/consumers/jack", "")
		e.fails(404, "Key not found", "GET", "/gw/admin/consumers/jack/credentials/c2", "")
		if len(e.holder.Load().Auth["key-auth"]) != 0 {
			t.Fatalf("credentials survived their consumer: %+v", e.holder.Load().Auth)
		}
		// The freed key can be used again.
		e.must(201, "PUT", "/gw/admin/consumers/jill/credentials/k", `{"plugins":{"key-auth":{"key":"k-jack-2"}}}`)
		e.must(200, "DELETE", "/gw/admin/consumers/jill/credentials/k", "")
		e.fails(400, "invalid consumer id", "PUT", "/gw/admin/consumers/bad$name", `{}`)
		e.fails(400, "invalid consumer id [a b]", "PUT", "/gw/admin/consumers", `{"username":"a b"}`)
	})
}

func TestGlobalRulesAndPluginConfigs(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		e.must(201, "PUT", "/gw/admin/global_rules/2", `{"plugins":{"limit-count":{"count":10,"time_window":1}}}`)
		e.fails(400, "plugin [limit-count] is already configured in global rule [2]", "PUT", "/gw/admin/global_rules/1", `{"plugins":{"limit-count":{"count":1,"time_window":1}}}`)
		e.must(201, "PUT", "/gw/admin/global_rules/1", `{"plugins":{"prometheus":{}}}`)
		e.must(200, "PUT", "/gw/admin/global_rules/2", `{"plugins":{"limit-count":{"count":20,"time_window":1}}}`)
		e.must(200, "PATCH", "/gw/admin/global_rules/2", `{"plugins":{"limit-count":{"count":30}}}`)
		e.fails(400, `property "plugins" is required`, "PUT", "/gw/admin/global_rules/3", `{}`)
		g := e.holder.Load().GlobalRules
		if len(g) != 2 || g[0].ID != "1" || g[1].ID != "2" || !strings.Contains(string(g[1].Plugins["limit-count"]), `"count":30`) {
			t.Fatalf("global rules %+v", g)
		}
		e.must(201, "PUT", "/gw/admin/plugin_configs/1", `{"plugins":{"proxy-rewrite":{"uri":"/x"}},"name":"pc","labels":{"a":"b"}}`)
		e.must(200, "PATCH", "/gw/admin/plugin_configs/1", `{"desc":"d"}`)
		e.fails(400, `property "plugins" is required`, "PUT", "/gw/admin/plugin_configs/2", `{"name":"x"}`)
		// Plugin merge order: the route's own, then its plugin config's,
		// then its service's.
		e.must(201, "PUT", "/gw/admin/services/1", `{"plugins":{"proxy-rewrite":{"uri":"/svc"},"prometheus":{},"key-auth":{}},"upstream":{"nodes":{"127.0.0.1:1":1}},"hosts":["svc.io"]}`)
		e.must(201, "PUT", "/gw/admin/routes/1", `{"uri":"/a","service_id":"1","plugin_config_id":"1","plugins":{"key-auth":{"header":"k"}}}`)
		rt := e.holder.Load().RouteByID["1"]
		if string(rt.Plugins["proxy-rewrite"]) != `{"uri":"/x"}` || string(rt.Plugins["key-auth"]) != `{"header":"k"}` || rt.Plugins["prometheus"] == nil ||
			rt.Upstream == nil || len(rt.Hosts) != 1 || rt.Hosts[0].Name != "svc.io" {
			t.Fatalf("merged route %+v plugins %v", rt, rt.Plugins)
		}
		if e.holder.Load().Match("GET", "svc.io", "/a") != rt || e.holder.Load().Match("GET", "other.io", "/a") != nil {
			t.Fatal("service hosts not applied to matching")
		}
		// A plugin config change recompiles the routes using it.
		e.must(200, "PUT", "/gw/admin/plugin_configs/1", `{"plugins":{"proxy-rewrite":{"uri":"/y"}}}`)
		if p := e.holder.Load().RouteByID["1"].Plugins["proxy-rewrite"]; string(p) != `{"uri":"/y"}` {
			t.Fatalf("plugin config change not applied: %s", p)
		}
	})
}

func TestPluginMetadata(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		r := e.must(201, "PUT", "/gw/admin/plugin_metadata/http-logger", `{"log_format":{"host":"$host","route":"$route_id"}}`)
		if r.str("key") != "/gw/plugin_metadata/http-logger" {
			t.Fatalf("metadata answer %s", r.body)
		}
		e.must(200, "PUT", "/gw/admin/plugin_metadata/http-logger", `{"log_format":{"host":"$host"}}`)
		e.fails(400, "unknown plugin [nope]", "PUT", "/gw/admin/plugin_metadata/nope", `{"a":1}`)
		e.fails(400, `property "log_format" validation failed: wrong type`, "PUT", "/gw/admin/plugin_metadata/http-logger", `{"log_format":"x"}`)
		e.fails(400, "additional properties forbidden", "PUT", "/gw/admin/plugin_metadata/error-page", `{"enable":true,"error_418":{}}`)
		e.must(201, "PUT", "/gw/admin/plugin_metadata/error-page", `{"enable":true,"error_404":{"body":"<h1>gone</h1>","content_type":"text/html"}}`)
		// A plugin without a metadata schema takes any object.
		e.must(201, "PUT", "/gw/admin/plugin_metadata/key-auth", `{"anything":[1,2]}`)
		l := e.must(200, "GET", "/gw/admin/plugin_metadata?page_size=10", "")
		if l.str("total") != "3" {
			t.Fatalf("metadata list %s", l.body)
		}
		if m := e.holder.Load().PluginMetadata["error-page"]; !strings.Contains(string(m), "gone") {
			t.Fatalf("metadata snapshot %s", m)
		}
		e.must(200, "DELETE", "/gw/admin/plugin_metadata/key-auth", "")
		e.fails(404, "Key not found", "GET", "/gw/admin/plugin_metadata/key-auth", "")
	})
}

// testCert returns a self-signed certificate and key PEM for the names.
func testCert(t *testing.T, names ...string) (string, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
}

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestSSL(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		cert, key := testCert(t, "example.com")
		wcert, wkey := testCert(t, "*.example.org")
		_, otherKey := testCert(t, "other.io")
		r := e.must(201, "PUT", "/gw/admin/ssls/1", `{"sni":"example.com","cert":`+js(cert)+`,"key":`+js(key)+`}`)
		if r.get("value", "key") != nil || r.str("value", "cert") != cert {
			t.Fatalf("ssl write answer shows the key or lacks the cert: %.200s", r.body)
		}
		g := e.must(200, "GET", "/gw/admin/ssls/1", "")
		if g.get("value", "key") != nil || strings.Contains(string(g.body), "PRIVATE KEY") {
			t.Fatal("ssl read returned the key")
		}
		p := e.must(201, "POST", "/gw/admin/ssls", `{"snis":["*.example.org"],"cert":`+js(wcert)+`,"key":`+js(wkey)+`,"certs":[`+js(cert)+`],"keys":[`+js(key)+`]}`)
		l := e.must(200, "GET", "/gw/admin/ssls", "")
		if l.str("total") != "2" || strings.Contains(string(l.body), "PRIVATE KEY") {
			t.Fatal("ssl list returned a key")
		}
		kv, _ := e.st.Get(t.Context(), "/ssls/1")
		if !strings.Contains(string(kv.Value), "PRIVATE KEY") {
			t.Fatal("the key was not stored")
		}
		snap := e.holder.Load()
		if c := snap.CertFor("EXAMPLE.com"); c == nil || c.ID != "1" || len(c.Certificates) != 1 {
			t.Fatalf("exact sni: %+v", c)
		}
		if c := snap.CertFor("a.example.org"); c == nil || c.ID != p.str("value", "id") || len(c.Certificates) != 2 {
			t.Fatalf("wildcard sni: %+v", c)
		}
		if snap.CertFor("example.org") != nil || snap.CertFor("x.other.io") != nil {
			t.Fatal("sni matched too much")
		}
		e.fails(400, "failed to match cert and key", "PUT", "/gw/admin/ssls/2", `{"sni":"example.com","cert":`+js(cert)+`,"key":`+js(otherKey)+`}`)
		garbage := "-----BEGIN CERTIFICATE-----\n" + strings.Repeat("QUJD", 40) + "\n-----END CERTIFICATE-----\n"
		e.fails(400, "failed to parse cert", "PUT", "/gw/admin/ssls/2", `{"sni":"example.com","cert":`+js(garbage)+`,"key":`+js(key)+`}`)
		e.fails(400, `property "cert" validation failed: string too short, expected at least 128`, "PUT", "/gw/admin/ssls/2", `{"sni":"a.io","cert":"short","key":`+js(key)+`}`)
		e.fails(400, `property "key" is required`, "PUT", "/gw/admin/ssls/2", `{"sni":"a.io","cert":`+js(cert)+`}`)
		e.fails(400, `property "sni" is required`, "PUT", "/gw/admin/ssls/2", `{"cert":`+js(cert)+`,"key":`+js(key)+`}`)
		e.fails(400, `property "ssl_protocols" validation failed: expect array to have at most 3 items`, "PUT", "/gw/admin/ssls/2",
			`{"sni":"a.io","cert":`+js(cert)+`,"key":`+js(key)+`,"ssl_protocols":["TLSv1.1","TLSv1.2","TLSv1.3","TLSv1.3"]}`)
		e.fails(400, `matches none of the enum values`, "PUT", "/gw/admin/ssls/2", `{"sni":"a.io","cert":`+js(cert)+`,"key":`+js(key)+`,"ssl_protocols":["SSLv3"]}`)
		e.fails(400, `property "snis" cannot be used together`, "PUT", "/gw/admin/ssls/2", `{"sni":"a.io","snis":["b.io"],"cert":`+js(cert)+`,"key":`+js(key)+`}`)
		e.fails(400, `string too long, expected at most 65536`, "PUT", "/gw/admin/ssls/2", `{"sni":"a.io","cert":`+js(strings.Repeat("x", 65537))+`,"key":`+js(key)+`}`)
		// Secret references resolve when the snapshot compiles: $env://
		// (JSON member too); the managers are not built in this build.
		t.Setenv("GW_TEST_SSL_CERT", cert)
		kj, _ := json.Marshal(map[string]string{"pem": key})
		t.Setenv("GW_TEST_SSL_KEYS", string(kj))
		e.fails(400, `cert: reference $secret://vault/...: secret manager vault: not built in this build`, "PUT", "/gw/admin/ssls/3",
			`{"sni":"ref.io","cert":"$secret://vault/1/cert","key":"$secret://vault/1/key"}`)
		e.fails(400, `cert key: reference $env://GW_TEST_NOPE: the environment variable is not set`, "PUT", "/gw/admin/ssls/3",
			`{"sni":"ref.io","cert":"$env://GW_TEST_SSL_CERT","key":"$env://GW_TEST_NOPE"}`)
		e.must(201, "PUT", "/gw/admin/ssls/3", `{"sni":"ref.io","cert":"$env://GW_TEST_SSL_CERT","key":"$env://GW_TEST_SSL_KEYS/pem"}`)
		if c := e.holder.Load().CertFor("ref.io"); c == nil || !c.Reference || len(c.Certificates) != 1 {
			t.Fatalf("reference cert %+v", c)
		}
		// Disabled: stored, not served.
		e.must(200, "PATCH", "/gw/admin/ssls/1", `{"status":0}`)
		if e.holder.Load().CertFor("example.com") != nil {
			t.Fatal("a disabled certificate is served")
		}
		e.must(200, "GET", "/gw/admin/ssls/1", "")
		// PATCH keeps the stored key (it is merged, not re-sent).
		e.must(200, "PATCH", "/gw/admin/ssls/1", `{"status":1}`)
		if e.holder.Load().CertFor("example.com") == nil {
			t.Fatal("re-enabled certificate not served")
		}
	})
}

func TestSecrets(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		r := e.must(201, "PUT", "/gw/admin/secrets/vault/1", `{"uri":"http://127.0.0.1:8200","prefix":"kv/gw","token":"root"}`)
		if r.str("key") != "/gw/secrets/vault/1" || r.str("value", "id") != "vault/1" {
			t.Fatalf("secret answer %s", r.body)
		}
		e.must(201, "PUT", "/gw/admin/secrets/aws/a", `{"access_key_id":"AK","secret_access_key":"SK","region":"us-east-1"}`)
		e.must(201, "PUT", "/gw/admin/secrets/gcp/g", `{"auth_file":"/etc/gcp.json"}`)
		e.must(200, "PATCH", "/gw/admin/secrets/vault/1", `{"namespace":"ns"}`)
		e.fails(400, `property "token" is required`, "PUT", "/gw/admin/secrets/vault/2", `{"uri":"http://v","prefix":"p"}`)
		e.fails(400, `property "uri" validation failed: failed to match pattern`, "PUT", "/gw/admin/secrets/vault/2", `{"uri":"v","prefix":"p","token":"t"}`)
		e.fails(400, "invalid secret manager type [azure]", "PUT", "/gw/admin/secrets/azure/1", `{}`)
		e.fails(400, `at least one of "auth_config", "auth_file" is required`, "PUT", "/gw/admin/secrets/gcp/2", `{"ssl_verify":true}`)
		e.fails(400, `value should match only one schema, but matches more than one`, "PUT", "/gw/admin/secrets/gcp/2", `{"auth_file":"/a","auth_config":{"client_email":"e","private_key":"k","project_id":"p"}}`)
		l := e.must(200, "GET", "/gw/admin/secrets", "")
		if l.str("total") != "3" {
			t.Fatalf("secret list %s", l.body)
		}
		if e.must(200, "GET", "/gw/admin/secrets/aws", "").str("total") != "1" {
			t.Fatal("per-type secret list")
		}
		e.must(200, "GET", "/gw/admin/secrets/vault/1", "")
		if len(e.holder.Load().Secrets) != 3 {
			t.Fatal("secrets not in the snapshot")
		}
		e.must(200, "DELETE", "/gw/admin/secrets/vault/1", "")
		e.fails(404, "Key not found", "GET", "/gw/admin/secrets/vault/1", "")
	})
}

func TestStreamRoutes(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		r := e.must(201, "POST", "/gw/admin/stream_routes", `{"server_port":9100,"remote_addr":"127.0.0.1","upstream":{"nodes":{"127.0.0.1:6379":1},"scheme":"tcp"}}`)
		id := r.str("value", "id")
		g := e.must(200, "GET", "/gw/admin/stream_routes/"+id, "")
		if g.str("value", "create_time") == "" || g.str("value", "update_time") == "" {
			t.Fatalf("stream route read lacks timestamps: %s", g.body)
		}
		e.fails(400, `property "server_port" validation failed: expected 70000.000 to be at most 65535.000`, "PUT", "/gw/admin/stream_routes/2", `{"server_port":70000}`)
		e.fails(400, `property "server_port" validation failed: expected 0.000 to be at least 1.000`, "PUT", "/gw/admin/stream_routes/2", `{"server_port":0}`)
		e.fails(400, `property "name" validation failed: string too long, expected at most 256`, "PUT", "/gw/admin/stream_routes/2", `{"name":"`+strings.Repeat("n", 257)+`"}`)
		e.fails(400, "server_addr", "PUT", "/gw/admin/stream_routes/2", `{"server_addr":"not-an-ip"}`)
		e.must(201, "PUT", "/gw/admin/stream_routes/2", `{"name":"`+strings.Repeat("n", 256)+`","sni":"a.io","server_addr":"10.0.0.1"}`)
		if s := e.holder.Load().StreamRoutes; len(s) != 2 || s[1].ID != id || s[1].Upstream == nil || s[1].Upstream.Scheme != "tcp" || s[1].RemoteAddr.String() != "127.0.0.1/32" {
			t.Fatalf("stream routes %+v", s)
		}
	})
}

func TestPluginValidation(t *testing.T) {
	e := newEnv(t, stores[0].open)
	for _, c := range []struct{ plugins, want string }{
		{`{"nope":{}}`, "unknown plugin [nope]"},
		{`{"limit-count":{"time_window":1}}`, `failed to check the configuration of plugin limit-count err: property "count" is required`},
		{`{"limit-count":{"count":0,"time_window":1}}`, `plugin limit-count err: property "count" validation failed: expected 0.000 to be greater than 0.000`},
		{`{"limit-count":{"count":1,"time_window":1,"policy":"redis"}}`, `property "redis_host" is required`},
		{`{"limit-count":{"count":1,"time_window":1,"rejected_code":99}}`, `property "rejected_code" validation failed`},
		{`{"http-logger":{"uri":"http://l","max_req_body_bytes":0}}`, `property "max_req_body_bytes" validation failed: expected 0.000 to be at least 1.000`},
		{`{"http-logger":{"uri":"http://l","max_resp_body_bytes":0}}`, `property "max_resp_body_bytes" validation failed`},
		{`{"http-logger":{}}`, `property "uri" is required`},
		{`{"proxy-rewrite":{"uri":"no-slash"}}`, `plugin proxy-rewrite err: property "uri" validation failed: failed to match pattern`},
		{`{"proxy-rewrite":{"headers":{"set":{"X-A":{"o":1}}}}}`, `plugin proxy-rewrite err: property "headers" validation failed: property "set" validation failed: property "X-A"`},
		{`{"error-page":{"x":1}}`, `additional properties forbidden, found x`},
		{`{"jwt-auth":{"header":""}}`, `string too short`},
		{`{"ai-proxy-multi":{"instances":[{"name":"a","provider":"openai","weight":1},{"name":"a","provider":"openai","weight":1}]}}`, `failed to check the configuration of plugin ai-proxy-multi err: duplicate instance name "a"`},
		{`{"ai-proxy-multi":{"instances":[]}}`, `expect array to have at least 1 items`},
		{`{"prometheus":{"_meta":{"disable":"yes"}}}`, `property "_meta" validation failed: property "disable" validation failed: wrong type`},
	} {
		r := e.do("PUT", "/gw/admin/routes/1", `{"uri":"/a","plugins":`+c.plugins+`}`)
		if r.code != 400 || !strings.Contains(r.str("error_msg"), c.want) {
			t.Errorf("%s: got %d %s; want %q", c.plugins, r.code, r.body, c.want)
		}
	}
	for _, ok := range []string{
		`{"key-auth":{},"basic-auth":{},"jwt-auth":{"header":"x-jwt"},"prometheus":{"_meta":{"disable":true}},"error-page":{}}`,
		`{"limit-count":{"count":1,"time_window":60,"rejected_code":429,"policy":"redis","redis_host":"127.0.0.1"}}`,
		`{"proxy-rewrite":{"uri":"/x/$1","headers":{"set":{"X-A":"1"},"add":{"X-M":["a","b"]},"remove":["X-B"]}}}`,
		`{"http-logger":{"uri":"https://log.io/x","max_req_body_bytes":1}}`,
		`{"ai-proxy-multi":{"instances":[{"name":"a","provider":"openai","weight":1},{"name":"b","provider":"anthropic","weight":1}],"fallback_http_statuses":[429,503]}}`,
	} {
		e.must(201, "PUT", "/gw/admin/routes/1", `{"uri":"/a","plugins":`+ok+`}`)
		e.must(200, "DELETE", "/gw/admin/routes/1", "")
	}
	// jwt-auth credentials: RS256 needs a public key, HS256 a secret.
	e.must(201, "PUT", "/gw/admin/consumers/c", `{}`)
	e.fails(400, `property "public_key" is required`, "PUT", "/gw/admin/consumers/c/credentials/j", `{"plugins":{"jwt-auth":{"key":"k","algorithm":"RS256"}}}`)
	e.fails(400, `property "secret" is required`, "PUT", "/gw/admin/consumers/c/credentials/j", `{"plugins":{"jwt-auth":{"key":"k"}}}`)
	e.must(201, "PUT", "/gw/admin/consumers/c/credentials/j", `{"plugins":{"jwt-auth":{"key":"k","secret":"s"}}}`)
}

func TestSchemaAndPluginEndpoints(t *testing.T) {
	e := newEnv(t, stores[0].open)
	for _, res := range []string{"route", "routes", "service", "upstream", "consumer", "credential", "plugin_config", "global_rule", "stream_route", "ssl", "secrets/vault", "secrets/aws", "secrets/gcp"} {
		r := e.must(200, "GET", "/gw/admin/schema/"+res, "")
		if r.get("properties") == nil && r.get("$ref") == nil {
			t.Errorf("schema %s: %.200s", res, r.body)
		}
	}
	if r := e.must(200, "GET", "/gw/admin/schema/route", ""); r.str("properties", "uri", "maxLength") != "4096" {
		t.Fatalf("route schema %.300s", r.body)
	}
	e.fails(404, "schema not found", "GET", "/gw/admin/schema/nothing", "")
	k := e.must(200, "GET", "/gw/admin/schema/plugins/key-auth", "")
	if k.get("properties", "header") == nil || k.get("consumer_schema", "properties", "key") == nil || k.get("properties", "_meta") == nil {
		t.Fatalf("key-auth schema %s", k.body)
	}
	if m := e.must(200, "GET", "/gw/admin/schema/plugins/http-logger?schema_type=metadata", ""); m.get("properties", "log_format") == nil {
		t.Fatalf("metadata schema %s", m.body)
	}
	if m := e.must(200, "GET", "/gw/admin/schema/plugins/error-page", ""); m.get("metadata_schema", "properties", "error_404") == nil {
		t.Fatalf("plugin schema lacks its metadata schema: %s", m.body)
	}
	e.fails(404, "has no consumer schema", "GET", "/gw/admin/schema/plugins/limit-count?schema_type=consumer", "")
	e.fails(404, "plugin not found", "GET", "/gw/admin/schema/plugins/nope", "")
	l := e.must(200, "GET", "/gw/admin/plugins/list", "")
	var names []string
	if err := json.Unmarshal(l.body, &names); err != nil {
		t.Fatal(err)
	}
	want := []string{"ai-proxy-multi", "basic-auth", "error-page", "http-logger", "jwt-auth", "key-auth", "limit-count", "prometheus", "proxy-rewrite"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("plugins list %v", names)
	}
	if p := e.must(200, "GET", "/gw/admin/plugins/limit-count", ""); p.get("properties", "count") == nil {
		t.Fatalf("plugin endpoint %s", p.body)
	}
	if all := e.must(200, "GET", "/gw/admin/plugins", ""); all.get("prometheus") == nil {
		t.Fatalf("all plugins %.200s", all.body)
	}
	e.must(201, "PUT", "/gw/admin/routes/1", `{"uri":"/a","plugins":{"prometheus":{}}}`)
	before := e.runner.Applied()
	if r := e.must(200, "PUT", "/gw/admin/plugins/reload", ""); string(r.body) != "done" {
		t.Fatalf("reload answer %s", r.body)
	}
	if e.holder.Load().RouteByID["1"] == nil || e.runner.Applied() < before {
		t.Fatal("reload lost the routes")
	}
	e.fails(405, "not supported `GET` method for plugins reload", "GET", "/gw/admin/plugins/reload", "")
	e.fails(405, "not supported `POST` method for plugins", "POST", "/gw/admin/plugins/list", "")
}
