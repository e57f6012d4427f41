package usage

import (
	"bytes"

	"github.com/klauspost/compress/gzip"
)

// Gzipper compresses export payloads for one sink's worker (not safe for
// concurrent use). It keeps its writer between batches: a new deflate
// compressor costs hundreds of KiB of allocation per batch. klauspost's
// gzip at BestSpeed encodes several times faster than the standard
// library's default level (deflate was the largest cost of an OTLP
// exporter under load) for a few percent more bytes on the wire.
type Gzipper struct {
	buf bytes.Buffer
	zw  *gzip.Writer
}

// Compress appends the gzip stream of src to dst[:0]. dst may alias src.
func (g *Gzipper) Compress(dst, src []byte) ([]byte, error) {
	g.buf.Reset()
	if g.zw == nil {
		zw, err := gzip.NewWriterLevel(&g.buf, gzip.BestSpeed)
		if err != nil {
			return nil, err
		}
		g.zw = zw
	} else {
		g.zw.Reset(&g.buf)
	}
	if _, err := g.zw.Write(src); err != nil {
		return nil, err
	}
	if err := g.zw.Close(); err != nil {
		return nil, err
	}
	return append(dst[:0], g.buf.Bytes()...), nil
}
