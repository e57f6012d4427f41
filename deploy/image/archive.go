package image

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// WriteArchive writes img as an OCI image layout packed in a tar
// ("oci-archive"), with ref as its org.opencontainers.image.ref.name. Docker
// 25+ and podman load it as it is; skopeo copies it to any registry.
func WriteArchive(img v1.Image, ref, out string) error {
	dir, err := os.MkdirTemp("", "gw-image-layout")
	if err != nil {
		return fmt.Errorf("cannot write image: %w", err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("cannot write image layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return fmt.Errorf("cannot write image layout: %w", err)
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("cannot write image archive: %w", err)
	}
	if err := packDir(f, dir); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("cannot write image archive %s: %w", out, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write image archive: %w", err)
	}
	return os.Rename(tmp, out)
}

// packDir tars dir's regular files in name order with zeroed times and
// owners, so the archive of the same image is the same bytes.
func packDir(w io.Writer, dir string) error {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	return tw.Close()
}

// ReadArchive unpacks an archive written by WriteArchive into dir and
// returns its single image.
func ReadArchive(archive, dir string) (v1.Image, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, fmt.Errorf("cannot read image archive: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read image archive: %w", err)
		}
		name := filepath.Clean(h.Name)
		if h.Typeflag != tar.TypeReg || filepath.IsAbs(name) || strings.HasPrefix(name, "..") {
			return nil, fmt.Errorf("cannot read image archive: unexpected entry %q", h.Name)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		out, err := os.Create(dst)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(out, tr)
		out.Close()
		if err != nil {
			return nil, fmt.Errorf("cannot read image archive: %w", err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read image layout: %w", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("cannot read image index: %w", err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("cannot read image archive: %d manifests, want 1", len(m.Manifests))
	}
	return idx.Image(m.Manifests[0].Digest)
}
