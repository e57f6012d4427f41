package usage

import "net/http"

// BatchWriteBuffer is the write buffer of the exporters' HTTP connections,
// so that a batch's body is copied into it whole. net/http copies a body
// larger than the buffer by handing the rest to the connection's
// ReadFrom, which on a TCP or TLS connection allocates a fresh 32 KB copy
// buffer for every request (its source, a length-limited reader, hides the
// body's WriteTo): under load that was most of the exporters' garbage,
// about 100 bytes per record. A batch larger than the buffer still works,
// as before.
const BatchWriteBuffer = 64 << 10

// Transport is net/http's default transport (proxy from the environment,
// dial and TLS timeouts, keep-alive pool) with the exporters' write
// buffer; each sink takes its own.
func Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.WriteBufferSize = BatchWriteBuffer
	return tr
}
