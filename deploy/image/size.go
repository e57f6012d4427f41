package image

import (
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Budget is the image size limit of issue 25, measured as Size.Compressed:
// the bytes a registry stores and shows and a node pulls (gzip layers, the
// config and the manifest). Unpacked sizes depend on the runtime's storage
// driver and are reported, not gated.
const Budget = 30 << 20

// Size is what an image weighs.
type Size struct {
	Binary       int64 // the gw executable as shipped (stripped)
	BaseLayer    int64 // compressed
	AppLayer     int64 // compressed
	Compressed   int64 // layers + config + manifest: what Budget measures
	Uncompressed int64 // the layers' tar streams
}

func (s Size) String() string {
	return fmt.Sprintf("binary %s, layers compressed %s (base %s, gw %s), uncompressed %s; budget %s on compressed",
		mib(s.Binary), mib(s.Compressed), mib(s.BaseLayer), mib(s.AppLayer), mib(s.Uncompressed), mib(Budget))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// Measure weighs img; binary is the executable it was built from ("" to
// leave Binary zero).
func Measure(img v1.Image, binary string) (Size, error) {
	var s Size
	if binary != "" {
		fi, err := os.Stat(binary)
		if err != nil {
			return s, fmt.Errorf("cannot measure image: %w", err)
		}
		s.Binary = fi.Size()
	}
	layers, err := img.Layers()
	if err != nil {
		return s, fmt.Errorf("cannot measure image: %w", err)
	}
	for i, l := range layers {
		n, err := l.Size()
		if err != nil {
			return s, fmt.Errorf("cannot measure image: %w", err)
		}
		switch i {
		case 0:
			s.BaseLayer = n
		default:
			s.AppLayer += n
		}
		s.Compressed += n
		rc, err := l.Uncompressed()
		if err != nil {
			return s, fmt.Errorf("cannot measure image: %w", err)
		}
		u, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return s, fmt.Errorf("cannot measure image: %w", err)
		}
		s.Uncompressed += u
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return s, fmt.Errorf("cannot measure image: %w", err)
	}
	man, err := img.RawManifest()
	if err != nil {
		return s, fmt.Errorf("cannot measure image: %w", err)
	}
	s.Compressed += int64(len(cfg) + len(man))
	return s, nil
}
