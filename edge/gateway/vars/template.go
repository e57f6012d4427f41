package vars

import (
	"errors"
	"strings"

	"github.com/valyala/fasthttp"
)

// Template is a string with variables: "$name", "${name}" and
// "${name ?? fallback}"; a backslash before "$" keeps it literal. An
// undefined variable without a fallback expands to nothing (as APISIX).
type Template struct {
	parts []part
	// Static is set when the template holds no variable.
	Static bool
}

type part struct {
	lit      string
	v        Var
	isVar    bool
	fallback string
	hasFB    bool
}

// CompileTemplate parses a template; an unknown variable name is an error
// so a typo is refused at write time instead of expanding to nothing.
func CompileTemplate(s string) (Template, error) {
	var t Template
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && s[i+1] == '$' {
			lit.WriteByte('$')
			i++
			continue
		}
		if c != '$' {
			lit.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return t, errors.New("cannot parse template: unclosed ${")
			}
			body := s[i+2 : i+2+end]
			name, fb, hasFB := strings.Cut(body, "??")
			name = strings.TrimSpace(name)
			if !validName(name) {
				return t, errors.New("cannot parse template: bad variable name in ${" + body + "}")
			}
			v, known := Compile(name)
			if !known {
				return t, errors.New("cannot parse template: unknown variable $" + name)
			}
			flush()
			t.parts = append(t.parts, part{v: v, isVar: true, fallback: strings.TrimSpace(fb), hasFB: hasFB})
			i += 2 + end
			continue
		}
		j := i + 1
		for j < len(s) && nameByte(s[j]) {
			j++
		}
		if j == i+1 {
			lit.WriteByte('$')
			continue
		}
		v, known := Compile(s[i+1 : j])
		if !known {
			return t, errors.New("cannot parse template: unknown variable $" + s[i+1:j])
		}
		flush()
		t.parts = append(t.parts, part{v: v, isVar: true})
		i = j - 1
	}
	flush()
	t.Static = true
	for _, p := range t.parts {
		if p.isVar {
			t.Static = false
		}
	}
	return t, nil
}

// Append expands the template into dst.
func (t *Template) Append(dst []byte, ctx *fasthttp.RequestCtx, c *Context) []byte {
	for i := range t.parts {
		p := &t.parts[i]
		if !p.isVar {
			dst = append(dst, p.lit...)
			continue
		}
		var ok bool
		dst, ok = p.v.Append(dst, ctx, c)
		if !ok && p.hasFB {
			dst = append(dst, p.fallback...)
		}
	}
	return dst
}

func nameByte(c byte) bool {
	return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		// ${post_arg.messages[0].role}: brackets only inside braces.
		if !nameByte(s[i]) && s[i] != '[' && s[i] != ']' && s[i] != '*' {
			return false
		}
	}
	return true
}
