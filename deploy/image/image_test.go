package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const testVersion = "v9.9.9-test"

// TestImage builds the image the way make image does, writes and reads
// back the OCI archive, and inspects it: config, labels, user, health
// check, size budget, the files of the base, and the binary itself run
// from the extracted layers (gw version, then gw serve answering the
// image's own health check command).
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gw")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := BuildBinary(ctx, "../..", testVersion, bin); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	opts := Options{Binary: bin, Version: testVersion, Revision: "0123456789abcdef", Created: created}
	built, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "gw-image.tar")
	if err := WriteArchive(built, "gw:test", archive); err != nil {
		t.Fatal(err)
	}
	img, err := ReadArchive(archive, filepath.Join(dir, "layout"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("reproducible", func(t *testing.T) {
		again, err := Build(opts)
		if err != nil {
			t.Fatal(err)
		}
		d1, _ := img.Digest()
		d2, _ := again.Digest()
		if d1 != d2 {
			t.Fatalf("same inputs, digests %s and %s", d1, d2)
		}
	})

	t.Run("manifest", func(t *testing.T) {
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 2 {
			t.Fatalf("manifest %s, config %s, %d layers", m.MediaType, m.Config.MediaType, len(m.Layers))
		}
		for _, l := range m.Layers {
			if l.MediaType != types.OCILayer {
				t.Fatalf("layer media type %s", l.MediaType)
			}
		}
	})

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("config", func(t *testing.T) {
		c := cf.Config
		if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(created) {
			t.Fatalf("platform %s/%s created %v", cf.OS, cf.Architecture, cf.Created)
		}
		if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/gw"}) || !slices.Equal(c.Cmd, []string{"serve", "--resources-file", "/etc/gw/gw.yaml"}) {
			t.Fatalf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
		}
		if c.User != "65532:65532" {
			t.Fatalf("user %q: must be the non-root 65532", c.User)
		}
		if !slices.Contains(c.Env, "GW_LISTEN=0.0.0.0:8080") || !slices.Contains(c.Env, "GW_DATA_DIR=/var/lib/gw") {
			t.Fatalf("env %q", c.Env)
		}
		if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
			t.Fatalf("exposed ports %v", c.ExposedPorts)
		}
		if h := c.Healthcheck; h == nil || !slices.Equal(h.Test, []string{"CMD", "/usr/local/bin/gw", "healthcheck"}) || h.Interval <= 0 || h.Timeout <= 0 || h.Retries <= 0 {
			t.Fatalf("healthcheck %+v", c.Healthcheck)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.title":    "gw",
			"org.opencontainers.image.version":  testVersion,
			"org.opencontainers.image.revision": "0123456789abcdef",
			"org.opencontainers.image.created":  "2026-11-26T05:00:00Z",
		} {
			if got := c.Labels[k]; got != want {
				t.Errorf("label %s = %q; want %q", k, got, want)
			}
		}
		if len(cf.History) != 2 {
			t.Fatalf("history %d entries, want one per layer", len(cf.History))
		}
	})

	t.Run("size", func(t *testing.T) {
		sz, err := Measure(img, bin)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("size: %s", sz)
		if sz.Compressed > Budget {
			t.Fatalf("image is %d bytes compressed, over the %d budget: %s", sz.Compressed, Budget, sz)
		}
		fi, err := os.Stat(archive)
		if err != nil {
			t.Fatal(err)
		}
		// The archive holds the same blobs plus the layout's small files.
		if fi.Size() < sz.Compressed || fi.Size() > sz.Compressed+64<<10 {
			t.Fatalf("archive %d bytes, blobs %d", fi.Size(), sz.Compressed)
		}
	})

	root := filepath.Join(dir, "rootfs")
	extract(t, img, root)

	t.Run("filesystem", func(t *testing.T) {
		passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
		if err != nil || !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
			t.Fatalf("passwd %q %v", passwd, err)
		}
		ca, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
		if err != nil || !x509.NewCertPool().AppendCertsFromPEM(ca) {
			t.Fatalf("CA bundle unusable: %v", err)
		}
		for path, want := range map[string]os.FileMode{
			"tmp":               os.ModeDir | os.ModeSticky | 0o777,
			"var/lib/gw":        os.ModeDir | 0o700,
			"usr/local/bin/gw":  0o755,
			"etc/gw":            os.ModeDir | 0o755,
			"etc/nsswitch.conf": 0o644,
		} {
			fi, err := os.Lstat(filepath.Join(root, path))
			if err != nil || fi.Mode() != want {
				t.Errorf("%s: %v, mode %v; want %v", path, err, fi.Mode(), want)
			}
		}
		// No shell or other program: the binary is the only executable.
		var execs []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, _ := d.Info(); fi.Mode()&0o111 != 0 {
					execs = append(execs, strings.TrimPrefix(p, root))
				}
			}
			return nil
		})
		if !slices.Equal(execs, []string{"/usr/local/bin/gw"}) {
			t.Fatalf("executables %q", execs)
		}
	})

	gw := filepath.Join(root, "usr/local/bin/gw")
	t.Run("static binary", func(t *testing.T) {
		f, err := elf.Open(gw)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Fatal("gw has an ELF interpreter: it is dynamically linked and cannot run on the base")
			}
		}
		if s := f.Section(".symtab"); s != nil {
			t.Fatal("gw keeps its symbol table: -s was not applied")
		}
	})

	t.Run("gw version", func(t *testing.T) {
		out, err := exec.Command(gw, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, want := range []string{"gw " + testVersion + " (go", "linux/amd64", "CGO_ENABLED   0", "-trimpath     true"} {
			if !strings.Contains(string(out), want) {
				t.Fatalf("gw version lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("serve and health check", func(t *testing.T) {
		serveWithImageEnv(t, cf, gw)
	})
}

// serveWithImageEnv starts the extracted gw the way the image does (its
// Env, with the listener moved to a free loopback port) and runs the
// image's HEALTHCHECK command until it passes.
func serveWithImageEnv(t *testing.T, cf *v1.ConfigFile, gw string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	res := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(res, []byte("_format_version: \"1\"\nprovider_keys:\n  - display_name: oa\n    api_key: sk-image-test\nmodels:\n  - display_name: gpt\n    provider: openai\n    model_name: gpt-4o\n    provider_key: oa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{}
	for _, e := range cf.Config.Env {
		if strings.HasPrefix(e, "GW_LISTEN=") || strings.HasPrefix(e, "GW_DATA_DIR=") {
			continue
		}
		env = append(env, e)
	}
	env = append(env, "GW_LISTEN="+addr, "GW_DEBUG_LISTEN=", "GW_ACCESS_LOG=false")
	args := append(slices.Clone(cf.Config.Cmd), "--resources-file", res)
	srv := exec.Command(gw, args...)
	srv.Env = env
	var logs bytes.Buffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
		}
	}()
	hc := cf.Config.Healthcheck.Test[1:] // "CMD", then argv
	deadline := time.Now().Add(20 * time.Second)
	for {
		cmd := exec.Command(gw, hc[1:]...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil {
			if !strings.Contains(string(out), "/livez: ok") {
				t.Fatalf("healthcheck output %q", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("image health check never passed: %v %s\ngw stderr:\n%s", err, out, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz %d", resp.StatusCode)
	}
}

// extract unpacks the image's flattened filesystem into root, keeping modes.
func extract(t *testing.T, img v1.Image, root string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dst, h.FileInfo().Mode()); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, h.FileInfo().Mode().Perm()); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("unexpected entry %s type %c", h.Name, h.Typeflag)
		}
	}
}

// TestBuildRejects: inputs that would ship a broken image are refused.
func TestBuildRejects(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gw")
	empty := filepath.Join(dir, "empty.pem")
	os.WriteFile(bin, []byte("not really a binary"), 0o755)
	os.WriteFile(empty, []byte("no certificates here\n"), 0o644)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no version", Options{Binary: bin}, "binary and version are required"},
		{"missing CA bundle", Options{Binary: bin, Version: "v1", CABundle: filepath.Join(dir, "none.pem")}, "cannot read CA bundle"},
		{"empty CA bundle", Options{Binary: bin, Version: "v1", CABundle: empty}, "holds no PEM certificate"},
		{"missing binary", Options{Binary: filepath.Join(dir, "nope"), Version: "v1"}, "cannot read gw binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Build(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want %q", err, tc.want)
			}
		})
	}
	if err := BuildBinary(context.Background(), "../..", "two words", filepath.Join(dir, "x")); err == nil {
		t.Fatal("a version with a space must be refused")
	}
}
