// Package proxyrewrite is the proxy-rewrite plugin: it rewrites the
// request forwarded upstream (URI from a variable template or regex_uri,
// method, Host, headers add/remove/set with variable values).
package proxyrewrite

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

// Name and Priority are APISIX's.
const (
	Name     = "proxy-rewrite"
	Priority = 1008
)

func init() {
	plugin.Register(&plugin.Def{Name: Name, Priority: Priority, New: New, Check: Check})
}

type conf struct {
	URI      string   `json:"uri"`
	Method   string   `json:"method"`
	RegexURI []string `json:"regex_uri"`
	Host     string   `json:"host"`
	Scheme   string   `json:"scheme"`
	RealURI  bool     `json:"use_real_request_uri_unsafe"`
	Headers  *struct {
		Add    map[string]json.RawMessage `json:"add"`
		Set    map[string]json.RawMessage `json:"set"`
		Remove []string                   `json:"remove"`
	} `json:"headers"`
}

type header struct {
	name   []byte
	values []vars.Template
}

type regexRule struct {
	re   *regexp.Regexp
	tmpl []byte
}

type rewrite struct {
	plugin.Base
	uri      *vars.Template
	regex    []regexRule
	method   []byte
	host     []byte
	add, set []header
	remove   [][]byte
}

// Check validates a configuration (the admin API's write-time check):
// compiling one needs nothing from the snapshot.
func Check(raw json.RawMessage) error {
	_, err := New(raw, nil, "")
	return err
}

// New compiles a proxy-rewrite configuration.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	var c conf
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("cannot decode: %w", err)
	}
	if c.Scheme != "" {
		// The upstream's scheme is fixed per pool; switching it per route
		// is not built, so refuse rather than send plain HTTP.
		return nil, fmt.Errorf("`scheme` is %w in this build", plugin.ErrNotBuilt)
	}
	if c.RealURI {
		return nil, fmt.Errorf("`use_real_request_uri_unsafe` is %w in this build", plugin.ErrNotBuilt)
	}
	p := &rewrite{method: []byte(c.Method), host: []byte(c.Host)}
	if c.Host == "" {
		p.host = nil
	}
	if c.Method == "" {
		p.method = nil
	}
	if c.URI != "" {
		t, err := vars.CompileTemplate(c.URI)
		if err != nil {
			return nil, fmt.Errorf("`uri`: %w", err)
		}
		p.uri = &t
	}
	if len(c.RegexURI)%2 != 0 {
		return nil, fmt.Errorf("`regex_uri` must hold pattern and replacement pairs")
	}
	for i := 0; i+1 < len(c.RegexURI); i += 2 {
		re, err := regexp.Compile(c.RegexURI[i])
		if err != nil {
			return nil, fmt.Errorf("`regex_uri` #%d: %w", i/2, err)
		}
		p.regex = append(p.regex, regexRule{re: re, tmpl: []byte(c.RegexURI[i+1])})
	}
	if h := c.Headers; h != nil {
		var err error
		if p.add, err = headers(h.Add); err != nil {
			return nil, fmt.Errorf("`headers.add`: %w", err)
		}
		if p.set, err = headers(h.Set); err != nil {
			return nil, fmt.Errorf("`headers.set`: %w", err)
		}
		for _, n := range h.Remove {
			p.remove = append(p.remove, []byte(n))
		}
	}
	return p, nil
}

// headers compiles a header name -> value (string, number or array of
// strings) object; each value may hold variables.
func headers(m map[string]json.RawMessage) ([]header, error) {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]header, 0, len(m))
	for _, n := range names {
		var raw []string
		var v any
		if err := json.Unmarshal(m[n], &v); err != nil {
			return nil, fmt.Errorf("header %q: %w", n, err)
		}
		switch x := v.(type) {
		case string:
			raw = []string{x}
		case float64:
			raw = []string{strconv.FormatFloat(x, 'f', -1, 64)}
		case []any:
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("header %q: array values must be strings", n)
				}
				raw = append(raw, s)
			}
		default:
			return nil, fmt.Errorf("header %q: value must be a string, number or array of strings", n)
		}
		h := header{name: []byte(n)}
		for _, s := range raw {
			t, err := vars.CompileTemplate(s)
			if err != nil {
				return nil, fmt.Errorf("header %q: %w", n, err)
			}
			h.values = append(h.values, t)
		}
		out = append(out, h)
	}
	return out, nil
}

func (p *rewrite) Phases() plugin.Phase { return plugin.Rewrite }

func (p *rewrite) Rewrite(c *plugin.Ctx) bool {
	req := &c.R.Request
	// Values are computed from the request as the client sent it, so the
	// header actions run before the URI changes what $uri means.
	for i := range p.add {
		h := &p.add[i]
		for j := range h.values {
			c.Buf = h.values[j].Append(c.Buf[:0], c.R, &c.Vars)
			req.Header.AddBytesKV(h.name, c.Buf)
		}
	}
	for _, n := range p.remove {
		req.Header.DelBytes(n)
	}
	for i := range p.set {
		h := &p.set[i]
		req.Header.DelBytes(h.name)
		for j := range h.values {
			c.Buf = h.values[j].Append(c.Buf[:0], c.R, &c.Vars)
			req.Header.AddBytesKV(h.name, c.Buf)
		}
	}
	if p.host != nil {
		c.SetHost(p.host)
	}
	if p.method != nil {
		req.Header.SetMethodBytes(p.method)
	}
	switch {
	case p.uri != nil:
		c.Buf2 = p.uri.Append(c.Buf2[:0], c.R, &c.Vars)
		c.Buf2 = appendArgs(c.Buf2, c)
		req.SetRequestURIBytes(c.Buf2)
	case len(p.regex) > 0:
		path := c.R.Path()
		for i := range p.regex {
			r := &p.regex[i]
			m := r.re.FindSubmatchIndex(path)
			if m == nil {
				continue
			}
			c.Buf2 = r.re.Expand(c.Buf2[:0], r.tmpl, path, m)
			c.Buf2 = appendArgs(c.Buf2, c)
			req.SetRequestURIBytes(c.Buf2)
			break
		}
	}
	return true
}

// appendArgs keeps the client's query string when the new URI has none
// (as APISIX).
func appendArgs(uri []byte, c *plugin.Ctx) []byte {
	for _, b := range uri {
		if b == '?' {
			return uri
		}
	}
	if q := c.R.URI().QueryString(); len(q) > 0 {
		uri = append(uri, '?')
		uri = append(uri, q...)
	}
	return uri
}
