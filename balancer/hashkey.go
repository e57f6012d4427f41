package balancer

import "errors"

// Header names the balancer defines for callers.
const (
	// RoutingKeyHeader is the default consistent_hash key source.
	RoutingKeyHeader = "x-gw-routing-key"
	// TagsHeader carries a request's routing tags as a comma-separated list
	// (spaces and tabs around items are ignored; matching is exact and
	// case-sensitive). Pass its value as Request.Tags.
	TagsHeader = "x-gw-tags"
)

// HashKind is a routing.hash_on source type.
type HashKind uint8

// Hash key sources.
const (
	HashHeader   HashKind = iota + 1 // request header Name
	HashCookie                       // request cookie Name
	HashAPIKey                       // the caller's API key identity
	HashClientIP                     // the client IP
)

// hashKinds maps routing.hash_on type names to kinds.
var hashKinds = map[string]HashKind{
	"header":    HashHeader,
	"cookie":    HashCookie,
	"api_key":   HashAPIKey,
	"client_ip": HashClientIP,
}

// HashSource is one compiled routing.hash_on item.
type HashSource struct {
	Kind HashKind
	Name string // header or cookie name; empty for the others
}

// DefaultHashSources is the hash_on default: header x-gw-routing-key, then
// the caller API key.
var DefaultHashSources = []HashSource{{Kind: HashHeader, Name: RoutingKeyHeader}, {Kind: HashAPIKey}}

// ErrHashSource is returned by ParseHashSource for an unknown type.
var ErrHashSource = errors.New("balancer: unknown hash_on type")

// ParseHashSource compiles one routing.hash_on item (type header, cookie,
// api_key or client_ip).
func ParseHashSource(typ, name string) (HashSource, error) {
	k, ok := hashKinds[typ]
	if !ok {
		return HashSource{}, ErrHashSource
	}
	if k == HashAPIKey || k == HashClientIP {
		name = ""
	}
	return HashSource{Kind: k, Name: name}, nil
}

// KeySource reads the request values hash_on can name. The integrator's
// per-request context implements it; each method returns nil or an empty
// slice when the value is absent. Returned slices are only read, and only
// until HashKey's result is used.
type KeySource interface {
	Header(name string) []byte
	Cookie(name string) []byte
	// APIKey returns a stable identity of the caller's key (its hash or
	// caller ID is enough; the plaintext is not needed).
	APIKey() []byte
	ClientIP() []byte
}

// HashKey returns the first non-empty value among sources (DefaultHashSources
// when sources is empty), or nil when all are empty. It does not copy: the
// result aliases what src returned.
func HashKey(sources []HashSource, src KeySource) []byte {
	if len(sources) == 0 {
		sources = DefaultHashSources
	}
	for i := range sources {
		var v []byte
		switch s := &sources[i]; s.Kind {
		case HashHeader:
			v = src.Header(s.Name)
		case HashCookie:
			v = src.Cookie(s.Name)
		case HashAPIKey:
			v = src.APIKey()
		case HashClientIP:
			v = src.ClientIP()
		}
		if len(v) > 0 {
			return v
		}
	}
	return nil
}
