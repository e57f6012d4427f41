package mcp

// type openapi MCP servers: every operation of an OpenAPI 3.0/3.1 document
// is a tool. kin-openapi parses the document and resolves its $refs
// (docs/DEPENDENCIES.md); this file turns operations into tool definitions
// and tool calls into HTTP requests.

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxOpenAPIDocBytes bounds an OpenAPI document (inline or fetched).
const MaxOpenAPIDocBytes = 8 << 20

// maxToolName is the MCP bound on a tool name.
const maxToolName = 128

// OpenAPISpec is an OpenAPI document converted to tools.
type OpenAPISpec struct {
	Title   string
	Servers []string // the document's servers URLs, variables at their defaults
	Tools   []*OpenAPITool
}

// OpenAPITool is one operation exposed as a tool.
type OpenAPITool struct {
	Tool   *sdk.Tool
	Method string // upper case
	Path   string // the path template, e.g. /pets/{id}
	Params []OpenAPIParam
	// BodyArg is the argument that carries the JSON request body ("" when
	// the operation takes none); BodyType its media type.
	BodyArg      string
	BodyType     string
	BodyRequired bool
}

// OpenAPIParam is one parameter of an operation and the argument it is
// read from.
type OpenAPIParam struct {
	Arg      string // the argument name in inputSchema
	Name     string // the parameter name on the wire
	In       string // path, query, header or cookie
	Required bool
	Style    string
	Explode  bool
}

// Tool returns the tool called name, or nil.
func (s *OpenAPISpec) Tool(name string) *OpenAPITool {
	for _, t := range s.Tools {
		if t.Tool.Name == name {
			return t
		}
	}
	return nil
}

// methods are the HTTP methods of a path item in the order tools are listed.
var methods = []string{"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"}

// ParseOpenAPI reads an OpenAPI 3.0 or 3.1 document (JSON or YAML) and
// converts its operations to tools. External $refs are refused: a
// document is one file. Errors never quote the document beyond what the
// parser names.
func ParseOpenAPI(doc []byte) (*OpenAPISpec, error) {
	if len(doc) > MaxOpenAPIDocBytes {
		return nil, errors.New("the OpenAPI document is larger than 8 MiB")
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	t, err := loadDoc(loader, doc)
	if err != nil {
		return nil, errors.New("cannot read the OpenAPI document: " + short(err.Error()))
	}
	if !strings.HasPrefix(t.OpenAPI, "3.") {
		return nil, errors.New("not an OpenAPI 3 document: `openapi: 3.x` is missing (Swagger 2.0 is not supported)")
	}
	if t.Paths == nil || t.Paths.Len() == 0 {
		return nil, errors.New("the OpenAPI document has no paths: it would expose no tool")
	}
	s := &OpenAPISpec{}
	if t.Info != nil {
		s.Title = t.Info.Title
	}
	for _, srv := range t.Servers {
		if srv != nil {
			s.Servers = append(s.Servers, serverURL(srv))
		}
	}
	paths := t.Paths.Keys()
	slices.Sort(paths)
	taken := map[string]bool{}
	for _, p := range paths {
		item := t.Paths.Value(p)
		if item == nil {
			continue
		}
		for _, m := range methods {
			op := item.GetOperation(m)
			if op == nil {
				continue
			}
			tool, err := convertOperation(m, p, item, op, taken)
			if err != nil {
				return nil, errors.New(strings.ToLower(m) + " " + p + ": " + err.Error())
			}
			if tool != nil {
				s.Tools = append(s.Tools, tool)
			}
		}
	}
	if len(s.Tools) == 0 {
		return nil, errors.New("the OpenAPI document has no operation that can be a tool")
	}
	return s, nil
}

// loadDoc runs the loader, turning its panics on hostile input into errors.
func loadDoc(loader *openapi3.Loader, doc []byte) (t *openapi3.T, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, errors.New("the document cannot be resolved")
		}
	}()
	return loader.LoadFromData(doc)
}

func short(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// serverURL is a servers entry with its variables at their defaults.
func serverURL(s *openapi3.Server) string {
	u := s.URL
	for name, v := range s.Variables {
		if v != nil {
			u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
		}
	}
	return u
}

func convertOperation(method, path string, item *openapi3.PathItem, op *openapi3.Operation, taken map[string]bool) (*OpenAPITool, error) {
	t := &OpenAPITool{Method: method, Path: path}
	name := sanitizeToolName(op.OperationID)
	if name == "" {
		name = sanitizeToolName(strings.ToLower(method) + "_" + path)
	}
	if name == "" {
		name = strings.ToLower(method)
	}
	base := name
	for i := 2; taken[name]; i++ {
		suffix := "_" + strconv.Itoa(i)
		name = base[:min(len(base), maxToolName-len(suffix))] + suffix
	}
	taken[name] = true

	desc := op.Summary
	if op.Description != "" {
		if desc != "" {
			desc += "\n\n"
		}
		desc += op.Description
	}
	if desc == "" {
		desc = method + " " + path
	}

	// Path-level parameters apply unless the operation redefines them.
	var params []*openapi3.Parameter
	for _, pr := range op.Parameters {
		if pr != nil && pr.Value != nil {
			params = append(params, pr.Value)
		}
	}
	for _, pr := range item.Parameters {
		if pr == nil || pr.Value == nil {
			continue
		}
		if !slices.ContainsFunc(params, func(q *openapi3.Parameter) bool { return q.Name == pr.Value.Name && q.In == pr.Value.In }) {
			params = append(params, pr.Value)
		}
	}

	sc := &schemaConv{defs: map[string]any{}, names: map[string]string{}}
	props := map[string]any{}
	var required []string
	for _, p := range params {
		if p.Name == "" {
			return nil, errors.New("a parameter has no name")
		}
		switch p.In {
		case openapi3.ParameterInPath, openapi3.ParameterInQuery, openapi3.ParameterInHeader, openapi3.ParameterInCookie:
		default:
			return nil, errors.New("parameter " + p.Name + ": unknown location " + strconv.Quote(p.In))
		}
		arg := p.Name
		if props[arg] != nil {
			arg = p.Name + "_" + p.In // the same name in two locations
		}
		var ps map[string]any
		switch {
		case p.Schema != nil:
			ps = sc.object(p.Schema)
		case len(p.Content) > 0:
			for _, mt := range p.Content {
				if mt != nil && mt.Schema != nil {
					ps = sc.object(mt.Schema)
				}
				break
			}
		}
		if ps == nil {
			ps = map[string]any{}
		}
		if p.Description != "" {
			if _, has := ps["description"]; !has {
				ps["description"] = p.Description
			}
		}
		props[arg] = ps
		req := p.Required || p.In == openapi3.ParameterInPath
		if req {
			required = append(required, arg)
		}
		explode := p.In == openapi3.ParameterInQuery || p.In == openapi3.ParameterInCookie // form style default
		if p.Explode != nil {
			explode = *p.Explode
		}
		t.Params = append(t.Params, OpenAPIParam{Arg: arg, Name: p.Name, In: p.In, Required: req, Style: p.Style, Explode: explode})
	}

	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		mt, media := jsonMedia(rb.Value.Content)
		switch {
		case mt != nil:
			t.BodyArg, t.BodyType, t.BodyRequired = "body", media, rb.Value.Required
			for props[t.BodyArg] != nil {
				t.BodyArg = "_" + t.BodyArg
			}
			var bs map[string]any
			if mt.Schema != nil {
				bs = sc.object(mt.Schema)
			} else {
				bs = map[string]any{}
			}
			if rb.Value.Description != "" {
				if _, has := bs["description"]; !has {
					bs["description"] = rb.Value.Description
				}
			}
			props[t.BodyArg] = bs
			if t.BodyRequired {
				required = append(required, t.BodyArg)
			}
		case rb.Value.Required:
			// Only JSON bodies are sent; an operation that needs another
			// kind of body cannot be called, so it is not a tool.
			delete(taken, name)
			return nil, nil
		}
	}

	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	if len(sc.defs) > 0 {
		schema["$defs"] = sc.defs
	}
	if sc.err != nil {
		return nil, sc.err
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, errors.New("cannot encode the input schema: " + short(err.Error()))
	}
	t.Tool = &sdk.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(raw)}
	if method == "GET" || method == "HEAD" {
		t.Tool.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: true}
	}
	return t, nil
}

// jsonMedia picks the JSON media type of a request body: application/json,
// then any */*+json.
func jsonMedia(c openapi3.Content) (*openapi3.MediaType, string) {
	if mt := c["application/json"]; mt != nil {
		return mt, "application/json"
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		base, _, _ := strings.Cut(k, ";")
		base = strings.TrimSpace(strings.ToLower(base))
		if c[k] != nil && (base == "application/json" || strings.HasSuffix(base, "+json")) {
			return c[k], k
		}
	}
	return nil, ""
}

// sanitizeToolName keeps the characters MCP allows in a tool name
// ([A-Za-z0-9_.-]); every run of others and of '_' becomes one '_' (so no
// name holds gw's "__" separator).
func sanitizeToolName(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-':
			b = append(b, c)
		case len(b) > 0 && b[len(b)-1] != '_':
			b = append(b, '_')
		}
	}
	out := strings.TrimRight(string(b), "_")
	if len(out) > maxToolName {
		out = strings.TrimRight(out[:maxToolName], "_")
	}
	return out
}

// schemaConv turns kin-openapi schemas into JSON Schema for inputSchema.
// A referenced schema becomes a $ref into the tool's $defs, converted
// once, so recursive and shared schemas stay linear in size.
type schemaConv struct {
	defs  map[string]any
	names map[string]string // the document's $ref -> its $defs name
	err   error
	nodes int
}

// maxSchemaNodes bounds the schema nodes of one tool.
const maxSchemaNodes = 20000

func (sc *schemaConv) object(r *openapi3.SchemaRef) map[string]any {
	if v, ok := sc.ref(r).(map[string]any); ok {
		return v
	}
	return map[string]any{}
}

func (sc *schemaConv) ref(r *openapi3.SchemaRef) any {
	if r == nil {
		return map[string]any{}
	}
	if sc.nodes++; sc.nodes > maxSchemaNodes {
		if sc.err == nil {
			sc.err = errors.New("a schema is too large (more than 20000 nodes)")
		}
		return map[string]any{}
	}
	if r.Ref == "" || !strings.HasPrefix(r.Ref, "#/") {
		return sc.schema(r.Value)
	}
	name, ok := sc.names[r.Ref]
	if !ok {
		name = r.Ref[strings.LastIndexByte(r.Ref, '/')+1:]
		if name == "" {
			name = "schema"
		}
		base := name
		for i := 2; sc.defs[name] != nil; i++ {
			name = base + "_" + strconv.Itoa(i)
		}
		sc.names[r.Ref] = name
		sc.defs[name] = map[string]any{} // placeholder: a recursive ref finds it
		sc.defs[name] = sc.schema(r.Value)
	}
	return map[string]any{"$ref": "#/$defs/" + escapePointer(name)}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (sc *schemaConv) schema(s *openapi3.Schema) any {
	if s == nil {
		return map[string]any{}
	}
	y, err := s.MarshalYAML()
	if err != nil {
		if sc.err == nil {
			sc.err = errors.New("cannot convert a schema: " + short(err.Error()))
		}
		return map[string]any{}
	}
	m, ok := y.(map[string]any)
	if !ok {
		return y // a boolean schema
	}
	for k, v := range m {
		m[k] = sc.value(v)
	}
	// OpenAPI 3.0's nullable is JSON Schema's "null" type.
	if n, _ := m["nullable"].(bool); n {
		delete(m, "nullable")
		if ts := s.Type.Slice(); len(ts) > 0 && !slices.Contains(ts, "null") {
			m["type"] = append(slices.Clone(ts), "null")
		}
	}
	return m
}

// value converts the sub-schemas among a schema's keyword values.
func (sc *schemaConv) value(v any) any {
	switch x := v.(type) {
	case *openapi3.SchemaRef:
		return sc.ref(x)
	case openapi3.SchemaRefs:
		out := make([]any, len(x))
		for i, r := range x {
			out[i] = sc.ref(r)
		}
		return out
	case openapi3.Schemas:
		out := make(map[string]any, len(x))
		for k, r := range x {
			out[k] = sc.ref(r)
		}
		return out
	case openapi3.BoolSchema:
		if x.Schema != nil {
			return sc.ref(x.Schema)
		}
		if x.Has != nil {
			return *x.Has
		}
		return true
	case *openapi3.BoolSchema:
		if x == nil {
			return true
		}
		return sc.value(*x)
	case *openapi3.Types:
		if x == nil {
			return nil
		}
		if len(*x) == 1 {
			return (*x)[0]
		}
		return []string(*x)
	}
	return v
}

// requestURL builds the operation's URL on base from the arguments.
func (t *OpenAPITool) requestURL(base string, args map[string]any) (string, error) {
	path := t.Path
	q := url.Values{}
	for _, p := range t.Params {
		v, ok := args[p.Arg]
		if !ok || v == nil {
			if p.Required {
				return "", errors.New("argument " + p.Arg + " is required")
			}
			continue
		}
		switch p.In {
		case "path":
			path = strings.ReplaceAll(path, "{"+p.Name+"}", pathValue(joinValue(v, ",")))
		case "query":
			addQuery(q, p, v)
		}
	}
	u := strings.TrimRight(base, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u, nil
}

// pathValue escapes a path parameter; "." and ".." are escaped too, so a
// value cannot step out of the operation's path on a server that cleans
// paths.
func pathValue(v string) string {
	switch v {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(v)
}

func addQuery(q url.Values, p OpenAPIParam, v any) {
	switch x := v.(type) {
	case []any:
		if !p.Explode {
			sep := ","
			switch p.Style {
			case "spaceDelimited":
				sep = " "
			case "pipeDelimited":
				sep = "|"
			}
			q.Add(p.Name, joinValue(x, sep))
			return
		}
		for _, e := range x {
			q.Add(p.Name, scalar(e))
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		switch {
		case p.Style == "deepObject":
			for _, k := range keys {
				q.Add(p.Name+"["+k+"]", scalar(x[k]))
			}
		case p.Explode:
			for _, k := range keys {
				q.Add(k, scalar(x[k]))
			}
		default:
			q.Add(p.Name, joinValue(x, ","))
		}
	default:
		q.Add(p.Name, scalar(v))
	}
}

// joinValue is the simple/form serialisation of a value: arrays and
// objects (key,value pairs) joined with sep.
func joinValue(v any, sep string) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalar(e)
		}
		return strings.Join(parts, sep)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			parts = append(parts, k, scalar(x[k]))
		}
		return strings.Join(parts, sep)
	}
	return scalar(v)
}

// scalar is a primitive argument as text; a nested structure is its JSON.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// resolveBase is the URL operations are called on: the server's url, or
// else the document's first servers entry (resolved against specURL when
// relative).
func resolveBase(url_, specURL string, s *OpenAPISpec) (string, error) {
	if url_ != "" {
		return url_, nil
	}
	if len(s.Servers) == 0 || s.Servers[0] == "" {
		return "", errors.New("the document has no servers entry: set url")
	}
	u, err := url.Parse(s.Servers[0])
	if err != nil {
		return "", errors.New("the document's first servers entry is not a URL: set url")
	}
	if u.IsAbs() && (u.Scheme == "http" || u.Scheme == "https") {
		return u.String(), nil
	}
	if specURL == "" {
		return "", errors.New("the document's first servers entry is relative and the spec is inline: set url")
	}
	b, err := url.Parse(specURL)
	if err != nil {
		return "", errors.New("cannot resolve the document's servers entry against spec_url")
	}
	r := b.ResolveReference(u)
	if r.Scheme != "http" && r.Scheme != "https" {
		return "", errors.New("the document's first servers entry is not an http(s) URL: set url")
	}
	return r.String(), nil
}
