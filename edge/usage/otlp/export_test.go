package otlp

import "gw/edge/usage"

// AppendRequest exposes the wire encoder.
func AppendRequest(batch []usage.Record, service string) []byte {
	var sc scratch
	return appendRequest(nil, batch, service, &sc)
}

// AppendRequestGzip exposes the gzip encoder.
func AppendRequestGzip(batch []usage.Record, service string) []byte {
	var sc scratch
	return appendRequestGzip(nil, batch, service, &sc)
}

// Valid exposes the UTF-8 repair of string values.
var Valid = valid
