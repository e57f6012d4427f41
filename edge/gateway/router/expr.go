package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"unsafe"

	"github.com/valyala/fasthttp"

	"gw/edge/gateway/vars"
)

// Expr is a compiled route `vars` expression in lua-resty-expr's form:
// a list of conditions that must all hold, where a list may start with
// "AND", "OR", "!AND" or "!OR" and conditions nest; a condition is
// [var, op, value] or [var, "!", op, value].
type Expr struct {
	op    logic
	not   bool
	conds []cond
	subs  []*Expr
}

type logic uint8

const (
	logicAND logic = iota
	logicOR
)

type opKind uint8

const (
	opEq opKind = iota
	opNe
	opGt
	opGe
	opLt
	opLe
	opRegex
	opRegexI
	opIn
	opHas
	opIPMatch
)

type cond struct {
	v     vars.Var
	op    opKind
	not   bool
	str   []byte
	num   float64
	re    *regexp.Regexp
	set   [][]byte
	cidrs []netip.Prefix
}

// CompileExpr parses a vars expression (the route's stored JSON).
func CompileExpr(raw json.RawMessage) (*Expr, error) {
	var v []any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("cannot parse vars: %w", err)
	}
	return compileList(v, 0)
}

func compileList(v []any, depth int) (*Expr, error) {
	if depth > 16 {
		return nil, errors.New("cannot parse vars: nested deeper than 16 levels")
	}
	e := &Expr{}
	if len(v) > 0 {
		if s, ok := v[0].(string); ok {
			switch strings.ToUpper(s) {
			case "AND":
				v = v[1:]
			case "OR":
				e.op, v = logicOR, v[1:]
			case "!AND":
				e.not, v = true, v[1:]
			case "!OR":
				e.op, e.not, v = logicOR, true, v[1:]
			default:
				// A bare condition as the whole expression.
				c, err := compileCond(v)
				if err != nil {
					return nil, err
				}
				e.conds = append(e.conds, c)
				return e, nil
			}
		}
	}
	for i, item := range v {
		l, ok := item.([]any)
		if !ok {
			return nil, fmt.Errorf("cannot parse vars: item %d is not a list", i)
		}
		if len(l) > 0 {
			if s, ok := l[0].(string); ok && isLogic(s) {
				sub, err := compileList(l, depth+1)
				if err != nil {
					return nil, err
				}
				e.subs = append(e.subs, sub)
				continue
			}
			if _, ok := l[0].([]any); ok {
				sub, err := compileList(l, depth+1)
				if err != nil {
					return nil, err
				}
				e.subs = append(e.subs, sub)
				continue
			}
		}
		c, err := compileCond(l)
		if err != nil {
			return nil, err
		}
		e.conds = append(e.conds, c)
	}
	return e, nil
}

func isLogic(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "!AND", "!OR":
		return true
	}
	return false
}

func compileCond(l []any) (cond, error) {
	var c cond
	if len(l) < 2 {
		return c, fmt.Errorf("cannot parse vars: condition %v needs a variable, an operator and a value", l)
	}
	name, ok := l[0].(string)
	if !ok {
		return c, fmt.Errorf("cannot parse vars: variable name %v is not a string", l[0])
	}
	name = strings.TrimPrefix(name, "$")
	v, known := vars.Compile(name)
	if !known {
		return c, fmt.Errorf("cannot parse vars: unknown variable %q", name)
	}
	c.v = v
	rest := l[1:]
	if op, _ := rest[0].(string); op == "!" {
		c.not = true
		rest = rest[1:]
	}
	if len(rest) != 2 {
		return c, fmt.Errorf("cannot parse vars: condition %v needs an operator and one value", l)
	}
	op, ok := rest[0].(string)
	if !ok {
		return c, fmt.Errorf("cannot parse vars: operator %v is not a string", rest[0])
	}
	val := rest[1]
	lop := strings.ToLower(op)
	if v.List() && lop != "in" && lop != "has" {
		return c, fmt.Errorf("cannot parse vars: %q yields a list (a [*] path); only the in and has operators take it", name)
	}
	switch lop {
	case "==":
		c.op = opEq
	case "~=":
		c.op = opNe
	case ">":
		c.op = opGt
	case ">=":
		c.op = opGe
	case "<":
		c.op = opLt
	case "<=":
		c.op = opLe
	case "~~":
		c.op = opRegex
	case "~*":
		c.op = opRegexI
	case "in":
		c.op = opIn
	case "has":
		c.op = opHas
	case "ipmatch":
		c.op = opIPMatch
	default:
		return c, fmt.Errorf("cannot parse vars: unknown operator %q", op)
	}
	switch c.op {
	case opGt, opGe, opLt, opLe:
		n, err := number(val)
		if err != nil {
			return c, fmt.Errorf("cannot parse vars: operator %s needs a number: %w", op, err)
		}
		c.num = n
	case opRegex, opRegexI:
		s, ok := val.(string)
		if !ok {
			return c, fmt.Errorf("cannot parse vars: operator %s needs a regular expression string", op)
		}
		if c.op == opRegexI {
			s = "(?i)" + s
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return c, fmt.Errorf("cannot parse vars: %w", err)
		}
		c.re = re
	case opIn, opIPMatch:
		arr, ok := val.([]any)
		if !ok {
			if c.op == opIn {
				return c, fmt.Errorf("cannot parse vars: operator in needs a list")
			}
			arr = []any{val}
		}
		for _, a := range arr {
			s := scalar(a)
			if c.op == opIn {
				c.set = append(c.set, []byte(s))
				continue
			}
			p, err := parsePrefix(s)
			if err != nil {
				return c, fmt.Errorf("cannot parse vars: ipmatch %q: %w", s, err)
			}
			c.cidrs = append(c.cidrs, p)
		}
	default:
		c.str = []byte(scalar(val))
	}
	return c, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func number(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Float64()
	case string:
		return strconv.ParseFloat(x, 64)
	}
	return 0, fmt.Errorf("%v is not a number", v)
}

// Eval evaluates the expression; buf is scratch space for variable values
// (returned grown, for reuse).
func (e *Expr) Eval(ctx *fasthttp.RequestCtx, c *vars.Context, buf []byte) (bool, []byte) {
	var r bool
	if e.op == logicAND {
		r = true
		for i := range e.conds {
			var ok bool
			if ok, buf = e.conds[i].eval(ctx, c, buf); !ok {
				r = false
				break
			}
		}
		if r {
			for _, s := range e.subs {
				var ok bool
				if ok, buf = s.Eval(ctx, c, buf); !ok {
					r = false
					break
				}
			}
		}
	} else {
		for i := range e.conds {
			if r, buf = e.conds[i].eval(ctx, c, buf); r {
				break
			}
		}
		if !r {
			for _, s := range e.subs {
				if r, buf = s.Eval(ctx, c, buf); r {
					break
				}
			}
		}
	}
	return r != e.not, buf
}

func (c *cond) eval(ctx *fasthttp.RequestCtx, vc *vars.Context, buf []byte) (bool, []byte) {
	if c.v.List() {
		// in: some element is in the set; has: some element is the value.
		var r bool
		r, buf = c.v.Each(ctx, buf, func(val []byte) bool {
			if c.op == opHas {
				return bytes.Equal(val, c.str)
			}
			for _, s := range c.set {
				if bytes.Equal(val, s) {
					return true
				}
			}
			return false
		})
		return r != c.not, buf
	}
	val, defined := c.v.Append(buf[:0], ctx, vc)
	buf = val
	var r bool
	if !defined {
		// An undefined variable equals nothing: only ~= holds.
		r = c.op == opNe
		return r != c.not, buf
	}
	switch c.op {
	case opEq:
		r = bytes.Equal(val, c.str)
	case opNe:
		r = !bytes.Equal(val, c.str)
	case opGt, opGe, opLt, opLe:
		n, err := strconv.ParseFloat(b2s(val), 64)
		if err == nil {
			switch c.op {
			case opGt:
				r = n > c.num
			case opGe:
				r = n >= c.num
			case opLt:
				r = n < c.num
			default:
				r = n <= c.num
			}
		}
	case opRegex, opRegexI:
		r = c.re.Match(val)
	case opIn:
		for _, s := range c.set {
			if bytes.Equal(val, s) {
				r = true
				break
			}
		}
	case opHas:
		// The value is a comma-separated list (a multi-value header).
		for len(val) > 0 && !r {
			item := val
			if i := bytes.IndexByte(val, ','); i >= 0 {
				item, val = val[:i], val[i+1:]
			} else {
				val = nil
			}
			r = bytes.Equal(bytes.TrimSpace(item), c.str)
		}
	case opIPMatch:
		if a, err := netip.ParseAddr(b2s(val)); err == nil {
			a = a.Unmap()
			for _, p := range c.cidrs {
				if p.Contains(a) {
					r = true
					break
				}
			}
		}
	}
	return r != c.not, buf
}

// b2s views b as a string for a parse that does not keep it.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
