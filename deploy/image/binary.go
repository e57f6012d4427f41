// Package image builds gw's container image without a Docker daemon: a
// static gw binary on a distroless-style base made here (CA certificates,
// a non-root user, nothing else), written as an OCI image layout archive.
package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Platform is the one the image is built for. gw is pure Go, so other
// platforms only need GOARCH changed; one keeps the test and CI fast.
const (
	GOOS   = "linux"
	GOARCH = "amd64"
)

// BuildBinary compiles gw from the module at repoRoot into out the way the
// image ships it: static (CGO_ENABLED=0, so the base needs no libc),
// -trimpath (no build machine paths), -s -w (no symbol table or DWARF:
// about a third of the unstripped size) and the version stamped into
// main.version. The VCS revision is stamped by the go command itself.
func BuildBinary(ctx context.Context, repoRoot, version, out string) error {
	if version == "" || strings.ContainsAny(version, " \t\n'\"") {
		return fmt.Errorf("cannot build gw: version %q must be one word", version)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+version, "-o", out, "./cmd/gw")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+GOOS, "GOARCH="+GOARCH, "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cannot build gw: %v\n%s", err, b)
	}
	return nil
}
