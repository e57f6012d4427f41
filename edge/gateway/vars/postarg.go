package vars

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// post_arg.<path> reads the request body: a JSON body by path
// (post_arg.model.version, post_arg.messages[0].role,
// post_arg.messages[*].content[*].type), a urlencoded or multipart form by
// field name (post_arg.name). A path with a [*] wildcard yields a list (the
// `in` and `has` operators test its elements). The body is only looked at
// when a variable is evaluated, so routes that do not use post_arg.* pay
// nothing.

// seg is one step of a post_arg path: an object key or an array index
// (index -1 is [*]).
type seg struct {
	key   string
	index int
	isIdx bool
}

const wildcard = -1

// ParsePath compiles a post_arg path ("a.b[0].c[*]").
func ParsePath(p string) ([]seg, error) {
	if p == "" {
		return nil, errors.New("empty post_arg path")
	}
	var out []seg
	for _, part := range strings.Split(p, ".") {
		key := part
		rest := ""
		if i := strings.IndexByte(part, '['); i >= 0 {
			key, rest = part[:i], part[i:]
		}
		if key == "" && (rest == "" || len(out) == 0) || strings.IndexByte(key, ']') >= 0 {
			return nil, errors.New("post_arg path " + strconv.Quote(p) + ": empty key")
		}
		if key != "" {
			out = append(out, seg{key: key})
		}
		for rest != "" {
			j := strings.IndexByte(rest, ']')
			if rest[0] != '[' || j < 0 {
				return nil, errors.New("post_arg path " + strconv.Quote(p) + ": bad index")
			}
			in := rest[1:j]
			rest = rest[j+1:]
			if in == "*" {
				out = append(out, seg{index: wildcard, isIdx: true})
				continue
			}
			n, err := strconv.Atoi(in)
			if err != nil || n < 0 {
				return nil, errors.New("post_arg path " + strconv.Quote(p) + ": index must be a non-negative integer or *")
			}
			out = append(out, seg{index: n, isIdx: true})
		}
	}
	return out, nil
}

func hasWildcard(path []seg) bool {
	for _, s := range path {
		if s.isIdx && s.index == wildcard {
			return true
		}
	}
	return false
}

// WalkJSON calls fn with every raw value path selects in data (strings keep
// their quotes), stopping when fn returns false; it reports whether the walk
// was stopped. The walk skips over the body without validating it, so a
// selected value is validated before it is yielded: a malformed one (from a
// malformed body) selects nothing rather than matching as garbage.
func WalkJSON(data []byte, path []seg, fn func(val []byte, k rawjson.Kind) bool) bool {
	if len(path) == 0 {
		v, k, ok := rawjson.GetPath(data)
		if !ok || !rawjson.Valid(v) {
			return false
		}
		return !fn(v, k)
	}
	s := path[0]
	if !s.isIdx {
		v, ok := exactMember(data, s.key)
		if !ok {
			return false
		}
		return WalkJSON(v, path[1:], fn)
	}
	stopped := false
	_ = rawjson.ForEachElem(data, func(i int, v []byte, _ rawjson.Kind) bool {
		if s.index != wildcard && i != s.index {
			return i < s.index
		}
		if WalkJSON(v, path[1:], fn) {
			stopped = true
			return false
		}
		return s.index == wildcard
	})
	return stopped
}

type bodyKind uint8

const (
	bodyOther bodyKind = iota
	bodyJSON
	bodyForm
	bodyMultipart
)

func bodyKindOf(ct []byte) bodyKind {
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = bytes.TrimSpace(ct)
	switch {
	case asciiEqualFold(ct, "application/json") || (len(ct) > 5 && asciiEqualFold(ct[len(ct)-5:], "+json")):
		return bodyJSON
	case asciiEqualFold(ct, "application/x-www-form-urlencoded"):
		return bodyForm
	case asciiEqualFold(ct, "multipart/form-data"):
		return bodyMultipart
	}
	return bodyOther
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// appendValue appends a selected JSON value: a string unquoted, anything
// else as written.
func appendValue(dst, v []byte, k rawjson.Kind) []byte {
	if k == rawjson.String {
		if out, err := rawjson.AppendUnquote(dst, v); err == nil {
			return out
		}
		return dst
	}
	return append(dst, v...)
}

// appendPostArg is Var.Append for post_arg.<path>: a list is written as a
// JSON array of the selected values.
func (v *Var) appendPostArg(dst []byte, ctx *fasthttp.RequestCtx) ([]byte, bool) {
	body := ctx.Request.Body()
	switch bodyKindOf(ctx.Request.Header.ContentType()) {
	case bodyJSON:
		if v.list {
			start := len(dst)
			dst = append(dst, '[')
			n := 0
			WalkJSON(body, v.path, func(val []byte, _ rawjson.Kind) bool {
				if n > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, val...)
				n++
				return true
			})
			if n == 0 {
				return dst[:start], false
			}
			return append(dst, ']'), true
		}
		found := false
		WalkJSON(body, v.path, func(val []byte, k rawjson.Kind) bool {
			dst, found = appendValue(dst, val, k), true
			return false
		})
		return dst, found
	case bodyForm:
		if len(v.path) != 1 || v.path[0].isIdx {
			return dst, false
		}
		b := ctx.PostArgs().PeekBytes(v.key)
		if b == nil {
			return dst, false
		}
		return append(dst, b...), true
	case bodyMultipart:
		if len(v.path) != 1 || v.path[0].isIdx {
			return dst, false
		}
		f, err := ctx.MultipartForm()
		if err != nil {
			return dst, false
		}
		vs := f.Value[v.path[0].key]
		if len(vs) == 0 {
			return dst, false
		}
		return append(dst, vs[0]...), true
	}
	return dst, false
}

// List reports whether the variable yields a list (a post_arg path with
// [*]).
func (v *Var) List() bool { return v.list }

// Each calls fn with every element of a list variable (strings unquoted
// into scratch, which is returned grown), stopping when fn returns true; it
// reports whether fn did. A list is found in JSON bodies only.
func (v *Var) Each(ctx *fasthttp.RequestCtx, scratch []byte, fn func(val []byte) bool) (bool, []byte) {
	if !v.list || bodyKindOf(ctx.Request.Header.ContentType()) != bodyJSON {
		return false, scratch
	}
	hit := WalkJSON(ctx.Request.Body(), v.path, func(val []byte, k rawjson.Kind) bool {
		scratch = appendValue(scratch[:0], val, k)
		return !fn(scratch)
	})
	return hit, scratch
}

// exactMember is the raw value of the member named key, spelled exactly so
// (escapes decoded; the last of duplicates), as APISIX's post_arg reads a
// body: not rawjson.Get, which matches names without case as the AI
// surfaces do for Go upstreams.
func exactMember(data []byte, key string) (val []byte, ok bool) {
	err := rawjson.ForEachKey(data, func(k, v []byte, _ rawjson.Kind) bool {
		if rawjson.StringEquals(k, key) {
			val, ok = v, true
		}
		return true
	})
	if err != nil {
		return nil, false
	}
	return val, ok
}
