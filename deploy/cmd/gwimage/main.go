// Command gwimage builds gw's container image without a Docker daemon and
// writes it as an OCI archive (make image). See docs/DEPLOY.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gw/deploy/image"
)

func main() {
	repo := flag.String("repo", "..", "root of the gw module")
	version := flag.String("version", "", "version stamped into gw and the labels (required)")
	out := flag.String("out", "bin/gw-image.tar", "OCI archive to write")
	ref := flag.String("ref", "", "image reference recorded in the archive (default gw:VERSION)")
	ca := flag.String("ca-bundle", image.DefaultCABundle, "PEM bundle of trusted CA certificates to ship")
	source := flag.String("source", "", "org.opencontainers.image.source label (repository URL)")
	flag.Parse()
	if err := run(*repo, *version, *out, *ref, *ca, *source); err != nil {
		fmt.Fprintln(os.Stderr, "gwimage:", err)
		os.Exit(1)
	}
}

func run(repo, version, out, ref, ca, source string) error {
	if version == "" {
		return fmt.Errorf("-version is required")
	}
	if ref == "" {
		ref = "gw:" + strings.TrimPrefix(version, "v")
	}
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gwimage")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "gw")
	if err := image.BuildBinary(context.Background(), repo, version, bin); err != nil {
		return err
	}
	rev, created := commit(repo)
	img, err := image.Build(image.Options{Binary: bin, CABundle: ca, Version: version, Revision: rev, Source: source, Created: created})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := image.WriteArchive(img, ref, out); err != nil {
		return err
	}
	sz, err := image.Measure(img, bin)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s@%s\n%s\n", out, ref, digest, sz)
	return nil
}

// commit is HEAD's revision and commit time (images built from the same
// commit get the same timestamps); outside git, no revision and the epoch.
func commit(repo string) (string, time.Time) {
	b, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%H %ct").Output()
	if err != nil {
		return "", time.Unix(0, 0)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return "", time.Unix(0, 0)
	}
	sec, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return f[0], time.Unix(0, 0)
	}
	return f[0], time.Unix(sec, 0)
}
