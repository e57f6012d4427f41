package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identities inside the image; docs/DEPLOY.md, the Dockerfile and
// the Helm chart rely on them.
const (
	BinaryPath    = "/usr/local/bin/gw"
	ResourcesFile = "/etc/gw/gw.yaml"
	DataDir       = "/var/lib/gw"
	CABundle      = "/etc/ssl/certs/ca-certificates.crt"
	// UID and GID are distroless's "nonroot" (65532), which Kubernetes
	// policies recognise and which owns no file on any host.
	UID = 65532
	GID = 65532
	// ProxyPort is where the image's GW_LISTEN puts the proxy listener.
	ProxyPort = 8080
)

// DefaultCABundle is the build machine's Mozilla bundle as Debian's
// ca-certificates package assembles it (the golang builder image of the
// Dockerfile has the same file).
const DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"

// Options describe one image.
type Options struct {
	Binary   string    // path of the static gw binary (BuildBinary)
	CABundle string    // PEM file copied to CABundle; DefaultCABundle when empty
	Version  string    // org.opencontainers.image.version and gw's main.version
	Revision string    // VCS revision (org.opencontainers.image.revision)
	Source   string    // org.opencontainers.image.source; omitted when empty
	Created  time.Time // image and file times: the commit time keeps builds reproducible
}

// Labels are the OCI annotations the config carries.
func (o Options) Labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":         "gw",
		"org.opencontainers.image.description":   "gw, a high-performance AI gateway",
		"org.opencontainers.image.version":       o.Version,
		"org.opencontainers.image.revision":      o.Revision,
		"org.opencontainers.image.created":       o.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.base.name":     "scratch",
		"org.opencontainers.image.documentation": "docs/DEPLOY.md",
	}
	if o.Source != "" {
		l["org.opencontainers.image.source"] = o.Source
	}
	if o.Revision == "" {
		delete(l, "org.opencontainers.image.revision")
	}
	return l
}

// Build assembles the image: a base layer (users, CA certificates, the
// writable directories gw needs) and a layer with the binary alone, so a
// new gw version re-uploads only the second.
func Build(o Options) (v1.Image, error) {
	if o.Binary == "" || o.Version == "" {
		return nil, fmt.Errorf("cannot build image: binary and version are required")
	}
	if o.CABundle == "" {
		o.CABundle = DefaultCABundle
	}
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0)
	}
	ca, err := os.ReadFile(o.CABundle)
	if err != nil {
		return nil, fmt.Errorf("cannot build image: cannot read CA bundle: %w", err)
	}
	// An empty or unparsable bundle would ship an image whose every TLS
	// upstream fails; refuse it here instead.
	if !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("cannot build image: %s holds no PEM certificate", o.CABundle)
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("cannot build image: cannot read gw binary: %w", err)
	}
	base, err := layer(baseFiles(ca), o.Created)
	if err != nil {
		return nil, err
	}
	app, err := layer([]file{{path: BinaryPath, mode: 0o755, body: bin}}, o.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "gw/deploy/image: base (passwd, group, CA certificates, /tmp, " + DataDir + ")", Comment: "distroless-style base"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "gw/deploy/image: " + BinaryPath + " (CGO_ENABLED=0 -trimpath -ldflags=-s -w)"}},
	)
	if err != nil {
		return nil, fmt.Errorf("cannot build image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("cannot build image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = GOARCH, GOOS
	cf.Created = v1.Time{Time: o.Created}
	cf.Author = ""
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"serve", "--resources-file", ResourcesFile},
		WorkingDir: "/home/nonroot",
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"SSL_CERT_FILE=" + CABundle,
			// The proxy must be reachable from outside the container; the
			// default 127.0.0.1:8080 would not be. Set by env (not flag) so
			// that gw healthcheck, which reads the same variables, finds it.
			fmt.Sprintf("GW_LISTEN=0.0.0.0:%d", ProxyPort),
			"GW_DATA_DIR=" + DataDir,
		},
		ExposedPorts: map[string]struct{}{fmt.Sprintf("%d/tcp", ProxyPort): {}},
		Labels:       o.Labels(),
		StopSignal:   "SIGTERM",
		Healthcheck: &v1.HealthConfig{
			Test:        []string{"CMD", BinaryPath, "healthcheck"},
			Interval:    10 * time.Second,
			Timeout:     3 * time.Second,
			StartPeriod: 5 * time.Second,
			Retries:     3,
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("cannot build image: %w", err)
	}
	return img, nil
}

type file struct {
	path     string
	mode     int64
	body     []byte
	dir      bool
	uid, gid int
}

// baseFiles is the distroless-style base: what a static Go binary needs
// from the filesystem and nothing that can run (no shell, no package
// manager). /tmp is there because gw spools large uploads to a temp file.
func baseFiles(ca []byte) []file {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := "root:x:0:\nnobody:x:65534:\n" + fmt.Sprintf("nonroot:x:%d:\n", GID)
	return []file{
		{path: "/etc", dir: true, mode: 0o755},
		{path: "/etc/passwd", mode: 0o644, body: []byte(passwd)},
		{path: "/etc/group", mode: 0o644, body: []byte(group)},
		// Go's resolver reads nsswitch.conf for the files-then-DNS order.
		{path: "/etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{path: "/etc/gw", dir: true, mode: 0o755},
		{path: "/etc/ssl", dir: true, mode: 0o755},
		{path: "/etc/ssl/certs", dir: true, mode: 0o755},
		{path: CABundle, mode: 0o644, body: ca},
		{path: "/home", dir: true, mode: 0o755},
		{path: "/home/nonroot", dir: true, mode: 0o700, uid: UID, gid: GID},
		{path: "/root", dir: true, mode: 0o700},
		{path: "/tmp", dir: true, mode: 0o1777},
		{path: "/usr", dir: true, mode: 0o755},
		{path: "/usr/local", dir: true, mode: 0o755},
		{path: "/usr/local/bin", dir: true, mode: 0o755},
		{path: "/var", dir: true, mode: 0o755},
		{path: "/var/lib", dir: true, mode: 0o755},
		{path: DataDir, dir: true, mode: 0o700, uid: UID, gid: GID},
	}
}

// layer writes files as a gzip-compressed tar with fixed times and owners,
// sorted, so the same inputs give the same digest.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.path[1:],
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("cannot build layer: %w", err)
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, fmt.Errorf("cannot build layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("cannot build layer: %w", err)
	}
	data := raw.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("cannot build layer: %w", err)
	}
	return l, nil
}
