package headers

import "strings"

// Config is the header policy of one provider key as Compile reads it:
// request.default_headers and request.forward_client_headers. The snapshot
// compiler fills it from the loaded provider key.
type Config struct {
	// DefaultHeaders are set on every upstream request, in file order.
	DefaultHeaders []Template
	// ForwardClientHeaders are exact names or patterns with one '*'
	// (trimmed and lowercased here again).
	ForwardClientHeaders []string
}

// Template is one default header: a lowercase name and a value of literal
// parts and per-request variables.
type Template struct {
	Name  string
	Parts []Part
}

// Part is literal text or one request variable.
type Part struct {
	Literal string
	Var     Var // VarNone for literal parts
}

// Var names a per-request value usable in default headers; it indexes Vars.
// The resource loader maps the ${request....} names to these.
type Var uint8

// Request variables. A header whose variable has no value for a request is
// dropped.
const (
	VarNone Var = iota
	VarAPIKeyID
	VarAPIKeyName
	VarAPIKeyTeamID
	VarAPIKeyUserID
	VarAPIKeyUserName
	VarModel
	VarRequestID
)

// AlwaysDropped reports the lowercase names that never go upstream from
// default_headers: host, hop-by-hop and x-gw-*.
func AlwaysDropped(h string) bool {
	return h == "host" || hopByHop(h) || strings.HasPrefix(h, "x-gw-")
}

// NeverRelayed reports the lowercase names that forward_client_headers
// never relays: AlwaysDropped, x-stainless-*, and the body and encoding
// headers gw sets itself (content-type, content-length, accept,
// accept-encoding, content-encoding, expect), set-cookie and
// anthropic-version.
func NeverRelayed(h string) bool {
	if AlwaysDropped(h) || strings.HasPrefix(h, "x-stainless-") {
		return true
	}
	switch h {
	case "content-type", "content-length", "accept", "accept-encoding", "content-encoding",
		"expect", "set-cookie", "anthropic-version":
		return true
	}
	return false
}

func hopByHop(h string) bool {
	switch h {
	case "connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
		"proxy-connection", "te", "trailer", "transfer-encoding", "upgrade":
		return true
	}
	return false
}
