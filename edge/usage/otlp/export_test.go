package otlp

import "gw/edge/usage"

// AppendRequest exposes the wire encoder.
func AppendRequest(batch []usage.Record, service string) []byte {
	var sc scratch
	return appendRequest(nil, batch, service, &sc)
}
