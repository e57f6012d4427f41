package startup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gw-startup.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPrecedence(t *testing.T) {
	c := Defaults()
	if c.UpstreamTimeoutMS != 6000000 || c.DebugListen != "127.0.0.1:9091" || c.Listen != "127.0.0.1:8080" {
		t.Fatalf("defaults: %+v", c)
	}
	p := writeFile(t, `listen: 0.0.0.0:7000
resources_file: from-file.yaml
upstream:
  timeout_ms: 1000
  tls: {verify: false}
observability:
  debug: 127.0.0.1:9999
server:
  trusted_proxies: [10.0.0.0/8, "192.168.1.1/32"]
  shutdown_grace: 5s
`)
	if err := LoadFile(&c, p); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GW_LISTEN": "127.0.0.1:7001", "GW_UPSTREAM_TIMEOUT_MS": "2000"}
	if err := ApplyEnv(&c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if err := Set(&c, "listen", "127.0.0.1:7002"); err != nil {
		t.Fatal(err)
	}
	// flags > env > file > defaults
	if c.Listen != "127.0.0.1:7002" {
		t.Fatalf("flag did not win: %s", c.Listen)
	}
	if c.UpstreamTimeoutMS != 2000 {
		t.Fatalf("env did not beat file: %d", c.UpstreamTimeoutMS)
	}
	if c.ResourcesFile != "from-file.yaml" || c.UpstreamTLSVerify || c.DebugListen != "127.0.0.1:9999" || c.ShutdownGrace != 5*time.Second {
		t.Fatalf("file values: %+v", c)
	}
	if len(c.TrustedProxies) != 2 || c.TrustedProxies[1].String() != "192.168.1.1/32" {
		t.Fatalf("trusted proxies: %v", c.TrustedProxies)
	}
}

func TestErrors(t *testing.T) {
	c := Defaults()
	err := LoadFile(&c, writeFile(t, "listen: x\nupstream: {timeout_ms: abc, colour: red}\nbogus: 1\n"))
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"upstream.timeout_ms: must be an integer", "upstream.colour: unknown setting", "bogus: unknown setting"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("missing %q in %v", want, err)
		}
	}
	if err := ApplyEnv(&c, func(k string) (string, bool) { return "nope", k == "GW_UPSTREAM_TLS_VERIFY" }); err == nil || !strings.Contains(err.Error(), "GW_UPSTREAM_TLS_VERIFY: must be true or false") {
		t.Fatalf("env error: %v", err)
	}
	if err := Set(&c, "no-such", "1"); err == nil {
		t.Fatal("unknown flag accepted")
	}
	c = Defaults()
	if _, err := c.Validate(); err == nil || !strings.Contains(err.Error(), "resources file is required") {
		t.Fatalf("validate: %v", err)
	}
	c.ResourcesFile = "x"
	c.DebugListen = "0.0.0.0:9091"
	w, err := c.Validate()
	if err != nil || len(w) != 1 || !strings.Contains(w[0], "non-loopback") {
		t.Fatalf("non-loopback debug: %v %v", w, err)
	}
	c.AdminListen = "127.0.0.1:9180"
	if _, err := c.Validate(); err == nil || !strings.Contains(err.Error(), "admin.key") {
		t.Fatalf("admin key: %v", err)
	}
	// With the admin API on, the resource file is optional; the store
	// settings are checked.
	c = Defaults()
	c.AdminListen, c.AdminKey = "127.0.0.1:9180", "k"
	if _, err := c.Validate(); err != nil {
		t.Fatalf("admin API without a resource file: %v", err)
	}
	if len(c.Unenforced()) != 1 || !strings.Contains(c.Unenforced()[0].Missing, "data plane is not built") {
		t.Fatalf("admin.listen unenforced item: %+v", c.Unenforced())
	}
	c.AdminStore = "etcd"
	if _, err := c.Validate(); err == nil || !strings.Contains(err.Error(), "admin.etcd.endpoints") {
		t.Fatalf("etcd without endpoints: %v", err)
	}
	c.AdminStore = "zookeeper"
	if _, err := c.Validate(); err == nil || !strings.Contains(err.Error(), "admin.store") {
		t.Fatalf("unknown store: %v", err)
	}
}

func TestSecretsRedacted(t *testing.T) {
	c := Defaults()
	c.AdminKey = "super-secret"
	for _, s := range Settings {
		if strings.Contains(s.Get(&c), "super-secret") {
			t.Fatalf("%s prints the secret", s.Path)
		}
	}
}

func TestEverySettingHasAllSources(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Settings {
		if s.Path == "" || !strings.HasPrefix(s.Env, "GW_") || s.Flag == "" || s.Help == "" {
			t.Fatalf("incomplete setting %+v", s.Path)
		}
		for _, k := range []string{"path:" + s.Path, s.Env, "flag:" + s.Flag} {
			if seen[k] {
				t.Fatalf("duplicate %s", k)
			}
			seen[k] = true
		}
	}
}

// TestSettingsDocumented keeps docs/CONFIG.md in step with the settings table.
func TestSettingsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings {
		for _, want := range []string{"`" + s.Path + "`", "`" + s.Env + "`", "`--" + s.Flag + "`"} {
			if !strings.Contains(string(doc), want) {
				t.Errorf("docs/CONFIG.md does not document %s", want)
			}
		}
	}
}
