// Package vars resolves the gateway's built-in variables ($uri, $arg_x,
// $http_x, $cookie_x, $remote_addr, ...) against a fasthttp request. A name
// is compiled once (Compile) into a Var whose Get reads the request without
// allocating; templates ("/v2$uri", "${arg_v ?? 1}") compile into a
// Template whose Append expands into a caller's buffer.
package vars

import (
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

// Kind says where a variable's value comes from.
type Kind uint8

const (
	kindUnknown Kind = iota
	kindURI
	kindRequestURI
	kindHost
	kindRemoteAddr
	kindRemotePort
	kindMethod
	kindScheme
	kindServerPort
	kindServerAddr
	kindQueryString
	kindArg
	kindHeader
	kindCookie
	kindPostArg
	kindPostArgPath
	kindRouteID
	kindRouteName
	kindServiceID
	kindConsumerName
)

// Var is one compiled variable name.
type Var struct {
	Name string // as written, without "$"
	kind Kind
	key  []byte // the argument, header or cookie name
	path []seg  // post_arg.<path>
	list bool   // the path has a [*] wildcard
}

// Context carries what the gateway knows beyond the request itself (the
// matched route, the consumer); a nil Context leaves those variables
// undefined.
type Context struct {
	RouteID, RouteName, ServiceID, ConsumerName string
}

// Compile resolves a variable name. Unknown names compile to a Var that is
// never defined (APISIX treats them as nil), so known reports whether the
// data plane can ever give it a value.
func Compile(name string) (v Var, known bool) {
	v.Name = name
	switch name {
	case "uri":
		v.kind = kindURI
	case "request_uri":
		v.kind = kindRequestURI
	case "host", "server_name":
		v.kind = kindHost
	case "remote_addr":
		v.kind = kindRemoteAddr
	case "remote_port":
		v.kind = kindRemotePort
	case "request_method":
		v.kind = kindMethod
	case "scheme":
		v.kind = kindScheme
	case "server_port":
		v.kind = kindServerPort
	case "server_addr":
		v.kind = kindServerAddr
	case "query_string", "args":
		v.kind = kindQueryString
	case "route_id":
		v.kind = kindRouteID
	case "route_name":
		v.kind = kindRouteName
	case "service_id":
		v.kind = kindServiceID
	case "consumer_name":
		v.kind = kindConsumerName
	default:
		switch {
		case strings.HasPrefix(name, "arg_") && len(name) > 4:
			v.kind, v.key = kindArg, []byte(name[4:])
		case strings.HasPrefix(name, "http_") && len(name) > 5:
			// nginx's $http_x_api_key is the header X-Api-Key.
			v.kind, v.key = kindHeader, []byte(strings.ReplaceAll(name[5:], "_", "-"))
		case strings.HasPrefix(name, "cookie_") && len(name) > 7:
			v.kind, v.key = kindCookie, []byte(name[7:])
		case strings.HasPrefix(name, "post_arg_") && len(name) > 9:
			v.kind, v.key = kindPostArg, []byte(name[9:])
		case strings.HasPrefix(name, "post_arg.") && len(name) > 9:
			p, err := ParsePath(name[9:])
			if err != nil {
				return v, false
			}
			v.kind, v.path, v.list = kindPostArgPath, p, hasWildcard(p)
			if !p[0].isIdx {
				v.key = []byte(p[0].key)
			}
		}
	}
	return v, v.kind != kindUnknown
}

// Append appends the variable's value to dst and reports whether it is
// defined. Values that need formatting (remote_addr, ports) are written
// into dst, so dst should have spare capacity to stay allocation-free.
func (v *Var) Append(dst []byte, ctx *fasthttp.RequestCtx, c *Context) ([]byte, bool) {
	switch v.kind {
	case kindURI:
		return append(dst, ctx.Path()...), true
	case kindRequestURI:
		return append(dst, ctx.Request.Header.RequestURI()...), true
	case kindHost:
		h := ctx.Request.Header.Host()
		if i := hostPortIndex(h); i >= 0 {
			h = h[:i]
		}
		return append(dst, h...), true
	case kindRemoteAddr:
		ip := ctx.RemoteIP()
		if ip == nil {
			return dst, false
		}
		if ip4 := ip.To4(); ip4 != nil {
			ip = ip4
		}
		return AppendIP(dst, ip), true
	case kindRemotePort:
		if a, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
			return strconv.AppendInt(dst, int64(a.Port), 10), true
		}
		return dst, false
	case kindMethod:
		return append(dst, ctx.Method()...), true
	case kindScheme:
		if ctx.IsTLS() {
			return append(dst, "https"...), true
		}
		return append(dst, "http"...), true
	case kindServerPort:
		if a, ok := ctx.LocalAddr().(*net.TCPAddr); ok {
			return strconv.AppendInt(dst, int64(a.Port), 10), true
		}
		return dst, false
	case kindServerAddr:
		ip := ctx.LocalIP()
		if ip == nil {
			return dst, false
		}
		if ip4 := ip.To4(); ip4 != nil {
			ip = ip4
		}
		return AppendIP(dst, ip), true
	case kindQueryString:
		return append(dst, ctx.URI().QueryString()...), true
	case kindArg:
		b := ctx.QueryArgs().PeekBytes(v.key)
		if b == nil {
			return dst, false
		}
		return append(dst, b...), true
	case kindHeader:
		b := ctx.Request.Header.PeekBytes(v.key)
		if b == nil {
			return dst, false
		}
		return append(dst, b...), true
	case kindCookie:
		b := ctx.Request.Header.CookieBytes(v.key)
		if b == nil {
			return dst, false
		}
		return append(dst, b...), true
	case kindPostArg:
		if !ctx.Request.Header.IsPost() || !isForm(ctx.Request.Header.ContentType()) {
			return dst, false
		}
		b := ctx.PostArgs().PeekBytes(v.key)
		if b == nil {
			return dst, false
		}
		return append(dst, b...), true
	case kindPostArgPath:
		return v.appendPostArg(dst, ctx)
	case kindRouteID:
		return appendCtx(dst, c, func(c *Context) string { return c.RouteID })
	case kindRouteName:
		return appendCtx(dst, c, func(c *Context) string { return c.RouteName })
	case kindServiceID:
		return appendCtx(dst, c, func(c *Context) string { return c.ServiceID })
	case kindConsumerName:
		return appendCtx(dst, c, func(c *Context) string { return c.ConsumerName })
	}
	return dst, false
}

func appendCtx(dst []byte, c *Context, f func(*Context) string) ([]byte, bool) {
	if c == nil {
		return dst, false
	}
	s := f(c)
	if s == "" {
		return dst, false
	}
	return append(dst, s...), true
}

func isForm(ct []byte) bool {
	const form = "application/x-www-form-urlencoded"
	return len(ct) >= len(form) && strings.EqualFold(string(ct[:len(form)]), form)
}

// hostPortIndex returns the index of the ":port" suffix of a Host header,
// or -1 (an IPv6 literal keeps its colons inside brackets).
func hostPortIndex(h []byte) int {
	for i := len(h) - 1; i >= 0; i-- {
		switch h[i] {
		case ':':
			return i
		case ']':
			return -1
		}
	}
	return -1
}

// HostOnly strips the port from a Host header value.
func HostOnly(h []byte) []byte {
	if i := hostPortIndex(h); i >= 0 {
		return h[:i]
	}
	return h
}

// AppendIP appends ip in its textual form (IPv4 for a mapped address).
func AppendIP(dst []byte, ip net.IP) []byte {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return dst
	}
	return a.Unmap().AppendTo(dst)
}
