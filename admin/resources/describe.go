package resources

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// The JSON Schema of the resource file is produced from the loader itself, so
// that the two cannot drift: with decoder.desc set, every obj accessor records
// what it expects at its path (type, enum, bounds, default, required, which
// mappings reject unknown fields). An explorer then runs each collection's
// decode function over synthesized entries: it fills in placeholder values
// for every mapping and list the decoder asks for until nothing new is asked,
// and it tries every value of each enum field and the presence and absence of
// every field the decoder tests with has/present. A field whose value changes
// what the decoder reads is a discriminator: the entry's schema becomes one
// closed variant per value (anyOf). The describer is nil on a normal load, so
// the only cost there is one nil check per accessor call.

// JSON types as a bit set.
const (
	tString uint8 = 1 << iota
	tInteger
	tNumber
	tBoolean
	tObject
	tArray
)

// anyKey is the key the explorer puts into every placeholder mapping: a
// decoder that treats the mapping as a map with keys of the user's choosing
// reads it, a decoder of fixed fields reports it as unknown (ignored here).
const anyKey = "__any__"

// otherValue stands for "a kind this build does not know" in hinted discriminators.
const otherValue = "x-describe-other"

type fieldRec struct {
	types    uint8
	enum     []string
	min, max *float64
	nonEmpty bool
	def      *bool
}

type objRec struct {
	read, probed, rejected, nullOnly map[string]bool
	closed, open                     bool
}

// describer collects what the accessors expect during one decode run.
// Paths have list indexes dropped ("routing.targets[].model").
type describer struct {
	fields map[string]*fieldRec
	objs   map[string]*objRec
}

func newDescriber() *describer {
	return &describer{fields: map[string]*fieldRec{}, objs: map[string]*objRec{}}
}

func (d *describer) field(path string) *fieldRec {
	path = NormalizePath(path)
	f := d.fields[path]
	if f == nil {
		f = &fieldRec{}
		d.fields[path] = f
	}
	return f
}

func (d *describer) obj(path string) *objRec {
	path = NormalizePath(path)
	o := d.objs[path]
	if o == nil {
		o = &objRec{read: map[string]bool{}, probed: map[string]bool{}, rejected: map[string]bool{}, nullOnly: map[string]bool{}}
		d.objs[path] = o
	}
	return o
}

func (d *describer) typ(path string, t uint8)      { d.field(path).types |= t }
func (d *describer) read(objPath, name string)     { d.obj(objPath).read[name] = true }
func (d *describer) probe(objPath, name string)    { d.obj(objPath).probed[name] = true }
func (d *describer) reject(objPath, name string)   { d.obj(objPath).rejected[name] = true }
func (d *describer) nullOnly(objPath, name string) { d.obj(objPath).nullOnly[name] = true }
func (d *describer) closed(objPath string)         { d.obj(objPath).closed = true }
func (d *describer) open(objPath string)           { d.obj(objPath).open = true }

func (d *describer) nonEmpty(path string) {
	f := d.field(path)
	f.types |= tString
	f.nonEmpty = true
}

func (d *describer) enum(path string, allowed []string) {
	f := d.field(path)
	f.types |= tString
	f.enum = append([]string(nil), allowed...)
}

func (d *describer) bounds(path string, lo, hi float64, hasLo, hasHi bool) {
	f := d.field(path)
	if hasLo {
		f.min = &lo
	}
	if hasHi {
		f.max = &hi
	}
}

func (d *describer) def(path string, v bool) { d.field(path).def = &v }

// signature serializes the records outside skip (a path and its subtree),
// for "did this value change what the decoder reads?".
func (d *describer) signature(skip string, required map[string]bool) string {
	var b strings.Builder
	under := func(p string) bool {
		return p == skip || strings.HasPrefix(p, skip+".") || strings.HasPrefix(p, skip+"[]")
	}
	for _, p := range descKeys(d.fields) {
		if under(p) {
			continue
		}
		b.WriteString("F" + p + d.fields[p].String() + "\n")
	}
	for _, p := range descKeys(d.objs) {
		if under(p) {
			continue
		}
		o := d.objs[p]
		b.WriteString("O" + p + ":")
		for i, set := range []map[string]bool{o.read, o.rejected, o.nullOnly} {
			for _, k := range descKeys(set) {
				// Whether the skipped field itself is read depends on its
				// presence (has-guarded blocks); whether it is rejected
				// does not, and tells a shape apart.
				if kp := joinPath(p, k); !under(kp) || (i > 0 && kp == skip) {
					b.WriteString(k + ",")
				}
			}
			b.WriteString("|")
		}
		if o.closed {
			b.WriteString("closed")
		}
		if o.open {
			b.WriteString("open")
		}
		b.WriteString("\n")
	}
	for _, p := range descKeys(required) {
		if !under(p) {
			b.WriteString("R" + p + "\n")
		}
	}
	return b.String()
}

func (f *fieldRec) String() string {
	s := strconv.Itoa(int(f.types)) + strings.Join(f.enum, "|")
	if f.min != nil {
		s += ">" + strconv.FormatFloat(*f.min, 'g', -1, 64)
	}
	if f.max != nil {
		s += "<" + strconv.FormatFloat(*f.max, 'g', -1, 64)
	}
	if f.nonEmpty {
		s += "!"
	}
	if f.def != nil {
		s += "=" + strconv.FormatBool(*f.def)
	}
	return s
}

func descKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// --- synthesized YAML trees ---

func yStr(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
func yNull() *yaml.Node        { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"} }
func yMap() *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{yStr(anyKey), yNull()}}
}
func ySeq() *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{yMap(), yStr("x")}}
}

func yClone(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = yClone(k)
	}
	return &c
}

// placeholder is a value of type t that lets the decoder look inside.
func placeholder(t uint8) *yaml.Node {
	switch {
	case t&tObject != 0:
		return yMap()
	case t&tArray != 0:
		return ySeq()
	case t&tInteger != 0:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "1"}
	case t&tNumber != 0:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: "0.5"}
	case t&tBoolean != 0:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
	}
	return yStr("x")
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}

// lookup returns the node at a normalized path ("a.b[].c": element 0 of b); nil when absent.
func lookup(root *yaml.Node, path string) *yaml.Node {
	n := root
	for _, seg := range splitPath(path) {
		key, elems := strings.TrimRight(seg, "[]"), (len(seg)-len(strings.TrimRight(seg, "[]")))/2
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
		for ; elems > 0; elems-- {
			if n == nil || n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		}
	}
	return n
}

// setAt writes v at path; missing or null parents become placeholder
// mappings. It reports false when a parent has another type.
func setAt(root *yaml.Node, path string, v *yaml.Node) bool {
	segs := splitPath(path)
	n := root
	for i, seg := range segs {
		key := strings.TrimRight(seg, "[]")
		elems := (len(seg) - len(key)) / 2
		if n.Kind != yaml.MappingNode {
			return false
		}
		idx := -1
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == key {
				idx = j + 1
			}
		}
		last := i == len(segs)-1 && elems == 0
		if last {
			if idx < 0 {
				n.Content = append(n.Content, yStr(key), v)
			} else {
				n.Content[idx] = v
			}
			return true
		}
		if idx < 0 {
			var c *yaml.Node
			if elems > 0 {
				c = ySeq()
			} else {
				c = yMap()
			}
			n.Content = append(n.Content, yStr(key), c)
			idx = len(n.Content) - 1
		} else if isNull(n.Content[idx]) {
			if elems > 0 {
				n.Content[idx] = ySeq()
			} else {
				n.Content[idx] = yMap()
			}
		}
		n = n.Content[idx]
		for ; elems > 0; elems-- {
			if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
				return false
			}
			if i == len(segs)-1 && elems == 1 {
				n.Content[0] = v
				return true
			}
			n = n.Content[0]
		}
	}
	return false
}

func removeAt(root *yaml.Node, path string) {
	segs := splitPath(path)
	if len(segs) == 0 {
		return
	}
	parent := root
	if len(segs) > 1 {
		parent = lookup(root, strings.Join(segs[:len(segs)-1], "."))
	}
	if parent == nil || parent.Kind != yaml.MappingNode {
		return
	}
	key := segs[len(segs)-1]
	for j := 0; j+1 < len(parent.Content); j += 2 {
		if parent.Content[j].Value == key {
			parent.Content = append(parent.Content[:j], parent.Content[j+2:]...)
			return
		}
	}
}

// --- exploration ---

type runResult struct {
	d        *describer
	required map[string]bool // paths reported "required" while absent
	tree     *yaml.Node      // the expanded tree the run saw
	// shapeErr: the run combined fields that exclude each other; every
	// file with this combination is rejected, so the variant is dropped.
	shapeErr bool
}

// isShapeError recognises the loader's messages for mutually exclusive
// fields ("set exactly one of a and b, not both", "mixes dispatch shapes").
func isShapeError(msg string) bool {
	return strings.Contains(msg, ", not both") || strings.HasPrefix(msg, "mixes dispatch shapes")
}

type explorer struct {
	coll  string
	dec   collectionDecoder
	hints map[string][]string // discriminators the accessors cannot see
	memo  map[string]*runResult
}

// discriminatorHints are discriminators decided by a table lookup rather
// than an enum accessor: the guardrail kind (an unknown kind loads, skipped).
func discriminatorHints(coll string) map[string][]string {
	if coll == CollGuardrails {
		return map[string][]string{"kind": GuardrailKinds()}
	}
	return nil
}

func (x *explorer) run(tree *yaml.Node) *runResult {
	key, _ := yaml.Marshal(tree)
	if r, ok := x.memo[string(key)]; ok {
		return r
	}
	d := &decoder{env: func(string) (string, bool) { return "", false }, desc: newDescriber()}
	l := &loader{d: d, res: &Resources{}}
	e := &entry{coll: x.coll}
	func() {
		defer func() { _ = recover() }() // a decoder panic only ends this probe
		if o := d.newObj(e, "", tree); o != nil {
			x.dec(l, e, o)
			o.finish()
		}
	}()
	r := &runResult{d: d.desc, required: map[string]bool{}, tree: tree}
	for _, er := range d.errs {
		r.shapeErr = r.shapeErr || isShapeError(er.Msg)
		if (er.Msg == "required" || strings.HasPrefix(er.Msg, "required")) && !strings.HasPrefix(er.Msg, "required (or") {
			p := NormalizePath(er.Path)
			if lookup(tree, p) == nil || isNull(lookup(tree, p)) {
				r.required[p] = true
			}
		}
	}
	x.memo[string(key)] = r
	return r
}

// runFix expands tree until the decoder asks for no mapping or list it has
// not seen, then probes the type of fields only read raw.
func (x *explorer) runFix(tree *yaml.Node, fixed map[string]bool) *runResult {
	tree = yClone(tree)
	var r *runResult
	for iter := 0; iter < 64; iter++ {
		r = x.run(tree)
		changed := false
		for _, p := range descKeys(r.d.fields) {
			f := r.d.fields[p]
			if f.types&(tObject|tArray) == 0 || fixed[p] || strings.HasSuffix(p, "[]") {
				continue
			}
			if n := lookup(tree, p); n == nil || isNull(n) {
				next := yClone(tree)
				if setAt(next, p, placeholder(f.types)) {
					tree, changed = next, true
				}
			}
		}
		if !changed {
			break
		}
	}
	// Fields read without an accessor that tells the type: try a string.
	for _, op := range descKeys(r.d.objs) {
		o := r.d.objs[op]
		for _, name := range descKeys(o.read) {
			p := joinPath(op, name)
			if name == anyKey || fixed[p] || strings.Contains(p, anyKey) {
				continue
			}
			if f := r.d.fields[p]; f != nil && f.types != 0 {
				continue
			}
			if n := lookup(tree, p); n != nil && !isNull(n) {
				continue
			}
			probe := yClone(tree)
			if !setAt(probe, p, yStr("x")) {
				continue
			}
			pr := x.run(probe)
			if f := pr.d.fields[p]; f != nil && f.types != 0 {
				*r.d.field(p) = *f
			}
		}
	}
	return r
}

type candidate struct {
	name   string
	values []*yaml.Node
	consts []string // enum values, "" for a presence value
	other  []string // hinted: the known values, for the "other" variant
	absent bool
}

func (x *explorer) candidates(r *runResult, path string, fixed map[string]bool) []candidate {
	o := r.d.objs[path]
	if o == nil {
		return nil
	}
	var out []candidate
	names := map[string]bool{}
	for k := range o.read {
		names[k] = true
	}
	for k := range o.probed {
		names[k] = true
	}
	hints := map[string][]string{}
	if path == "" {
		hints = discriminatorHints(x.coll)
	}
	for k := range hints {
		names[k] = true
	}
	for _, name := range descKeys(names) {
		p := joinPath(path, name)
		if fixed[p] || name == anyKey {
			continue
		}
		f := r.d.fields[p]
		c := candidate{name: name, absent: !r.required[p]}
		switch {
		case hints[name] != nil:
			for _, v := range hints[name] {
				c.values, c.consts = append(c.values, yStr(v)), append(c.consts, v)
			}
			c.values, c.consts, c.other = append(c.values, yStr(otherValue)), append(c.consts, otherValue), hints[name]
		case f != nil && len(f.enum) > 0:
			for _, v := range f.enum {
				c.values, c.consts = append(c.values, yStr(v)), append(c.consts, v)
			}
		case o.probed[name]:
			var t uint8
			if f != nil {
				t = f.types
			}
			c.values, c.consts = []*yaml.Node{placeholder(t)}, []string{""}
		default:
			continue
		}
		out = append(out, c)
	}
	// Values decide shapes, presence is judged within a shape: a field
	// fixed absent early would stay forbidden in every later variant.
	sort.SliceStable(out, func(i, j int) bool { return out[i].rank() < out[j].rank() })
	return out
}

func (c candidate) rank() int {
	switch {
	case c.other != nil:
		return 0
	case c.consts[0] != "":
		return 1
	}
	return 2
}

type schemaMap = map[string]any

// explore returns the schema of the mapping at path in tree.
func (x *explorer) explore(tree *yaml.Node, path string, fixed map[string]bool) schemaMap {
	r := x.runFix(tree, fixed)
	done := map[string]bool{}
	for again := true; again; {
		again = false
		for _, c := range x.candidates(r, path, fixed) {
			if done[c.name] {
				continue
			}
			done[c.name] = true
			if s, merged := x.tryCandidate(r, path, fixed, c); s != nil {
				return s
			} else if merged != nil {
				// Presence changes nothing outside the field: keep it
				// present so that its own structure is described.
				r, again = merged, true
				break
			}
		}
	}
	return x.build(r, path, fixed)
}

// tryCandidate runs the decoder with each value of c (and without c). When
// the runs differ outside c it returns the variants (anyOf of closed
// objects). Otherwise, for a presence candidate absent from r, it returns
// the run with c present.
func (x *explorer) tryCandidate(r *runResult, path string, fixed map[string]bool, c candidate) (schemaMap, *runResult) {
	p := joinPath(path, c.name)
	fx := copySet(fixed)
	fx[p] = true
	trees := make([]*yaml.Node, 0, len(c.values)+1)
	for _, v := range c.values {
		t := yClone(r.tree)
		setAt(t, p, yClone(v))
		trees = append(trees, t)
	}
	if c.absent {
		t := yClone(r.tree)
		removeAt(t, p)
		trees = append(trees, t)
	}
	sigs := map[string]bool{}
	shapeErr := make([]bool, len(trees))
	for i, t := range trees {
		vr := x.runFix(t, fx)
		sigs[vr.d.signature(p, vr.required)] = true
		// A variant that combines exclusive fields, or writes a field
		// the decoder rejects in this shape, describes no valid file.
		o := vr.d.objs[path]
		shapeErr[i] = vr.shapeErr || (i < len(c.values) && o != nil && o.rejected[c.name])
	}
	if len(sigs) < 2 {
		if len(c.consts) == 1 && c.consts[0] == "" {
			if n := lookup(r.tree, p); n == nil || isNull(n) {
				return nil, x.runFix(trees[0], fixed)
			}
		}
		return nil, nil
	}
	var variants []any
	for i, t := range trees {
		if shapeErr[i] {
			continue
		}
		s := x.explore(t, path, fx)
		for _, leaf := range leaves(s) {
			switch {
			case i >= len(c.values): // absent
				props, _ := leaf["properties"].(schemaMap)
				delete(props, c.name)
				if leaf["additionalProperties"] != false && props != nil {
					props[c.name] = false
				}
				leaf["required"] = without(leaf["required"], c.name)
			case c.consts[i] == otherValue:
				setProp(leaf, c.name, schemaMap{"type": "string", "pattern": `\S`, "not": schemaMap{"enum": toAny(c.other)}})
				leaf["required"] = with(leaf["required"], c.name)
			case c.consts[i] != "":
				setProp(leaf, c.name, schemaMap{"const": c.consts[i]})
				leaf["required"] = with(leaf["required"], c.name)
			default:
				leaf["required"] = with(leaf["required"], c.name)
			}
			if satisfiable(leaf) {
				variants = append(variants, leaf)
			}
		}
	}
	variants = mergeOptional(dedupe(variants))
	if len(variants) == 1 {
		return variants[0].(schemaMap), nil
	}
	return schemaMap{"anyOf": variants}, nil
}

// mergeOptional joins two variants that differ only in one field being
// required in the first and absent from the second: the field is optional.
func mergeOptional(vs []any) []any {
	key := func(s schemaMap) string { b, _ := json.Marshal(s); return string(b) }
	for changed := true; changed; {
		changed = false
		index := map[string]int{}
		for i, v := range vs {
			index[key(v.(schemaMap))] = i
		}
	outer:
		for i, v := range vs {
			a := v.(schemaMap)
			req, _ := a["required"].([]any)
			for _, q := range req {
				b := cloneSchema(a)
				props, _ := b["properties"].(schemaMap)
				delete(props, q.(string))
				if b["additionalProperties"] != false && props != nil {
					props[q.(string)] = false
				}
				b["required"] = without(b["required"], q.(string))
				cleanNil(b)
				j, ok := index[key(b)]
				if !ok || j == i {
					continue
				}
				a["required"] = without(a["required"], q.(string))
				cleanNil(a)
				vs = append(vs[:j], vs[j+1:]...)
				changed = true
				break outer
			}
		}
	}
	return vs
}

func cloneSchema(s schemaMap) schemaMap {
	b, _ := json.Marshal(s)
	var out schemaMap
	_ = json.Unmarshal(b, &out)
	return out
}

// leaves returns the object schemas of s (flattening anyOf).
func leaves(s schemaMap) []schemaMap {
	if alts, ok := s["anyOf"].([]any); ok && len(s) == 1 {
		var out []schemaMap
		for _, a := range alts {
			out = append(out, leaves(a.(schemaMap))...)
		}
		return out
	}
	return []schemaMap{s}
}

// satisfiable drops variants that require a field they do not allow (a
// field the decoder rejects in that shape).
func satisfiable(s schemaMap) bool {
	props, _ := s["properties"].(schemaMap)
	req, _ := s["required"].([]any)
	for _, r := range req {
		ps, ok := props[r.(string)]
		if (!ok && s["additionalProperties"] == false) || ps == false {
			return false
		}
	}
	return true
}

func setProp(s schemaMap, name string, v any) {
	props, _ := s["properties"].(schemaMap)
	if props == nil {
		props = schemaMap{}
		s["properties"] = props
	}
	props[name] = v
}

func with(list any, name string) []any {
	l, _ := list.([]any)
	for _, v := range l {
		if v == name {
			return l
		}
	}
	out := append(append([]any(nil), l...), name)
	sort.Slice(out, func(i, j int) bool { return out[i].(string) < out[j].(string) })
	return out
}

func without(list any, name string) any {
	l, _ := list.([]any)
	var out []any
	for _, v := range l {
		if v != name {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func dedupe(v []any) []any {
	seen := map[string]bool{}
	var out []any
	for _, s := range v {
		cleanNil(s.(schemaMap))
		k, _ := json.Marshal(s)
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, s)
		}
	}
	return out
}

func cleanNil(s schemaMap) {
	for k, v := range s {
		if v == nil {
			delete(s, k)
		}
		if l, ok := v.([]any); ok && len(l) == 0 {
			delete(s, k)
		}
	}
}

func copySet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// build is the schema of the mapping at path for one set of discriminator values.
func (x *explorer) build(r *runResult, path string, fixed map[string]bool) schemaMap {
	s := schemaMap{"type": "object"}
	o := r.d.objs[path]
	if o == nil {
		return s
	}
	props := schemaMap{}
	var req []any
	for _, name := range descKeys(o.read) {
		if name == anyKey || o.rejected[name] {
			continue
		}
		p := joinPath(path, name)
		if o.nullOnly[name] {
			props[name] = schemaMap{"type": "null"}
			continue
		}
		props[name] = x.fieldSchema(r, p, fixed)
		if r.required[p] {
			req = append(req, name)
		}
	}
	for _, name := range descKeys(o.rejected) {
		if !o.closed || o.open {
			props[name] = false
		}
	}
	if len(props) > 0 {
		s["properties"] = props
	}
	if len(req) > 0 {
		s["required"] = req
	}
	switch {
	case o.open:
	case r.d.fields[joinPath(path, anyKey)] != nil:
		s["additionalProperties"] = x.fieldSchema(r, joinPath(path, anyKey), fixed)
	case o.closed:
		s["additionalProperties"] = false
	}
	return s
}

func (x *explorer) fieldSchema(r *runResult, path string, fixed map[string]bool) any {
	f := r.d.fields[path]
	if f == nil || f.types == 0 {
		return schemaMap{}
	}
	var alts []any
	if f.types&tString != 0 {
		s := schemaMap{"type": "string"}
		if len(f.enum) > 0 {
			// A ${VAR} reference is resolved at load time; the schema
			// cannot know its value.
			s["anyOf"] = []any{schemaMap{"enum": toAny(f.enum)}, schemaMap{"pattern": `\$\{`}}
		} else if f.nonEmpty {
			s["pattern"] = `\S`
		}
		alts = append(alts, s)
	}
	num := func(t string) schemaMap {
		s := schemaMap{"type": t}
		if f.min != nil {
			s["minimum"] = *f.min
		}
		if f.max != nil && *f.max < math.MaxInt64/2 {
			s["maximum"] = *f.max
		}
		return s
	}
	if f.types&tNumber != 0 {
		alts = append(alts, num("number"))
	} else if f.types&tInteger != 0 {
		alts = append(alts, num("integer"))
	}
	if f.types&tBoolean != 0 {
		alts = append(alts, schemaMap{"type": "boolean"})
	}
	if f.types&tObject != 0 {
		alts = append(alts, x.explore(r.tree, path, fixed))
	}
	if f.types&tArray != 0 {
		alts = append(alts, schemaMap{"type": "array", "items": x.fieldSchema(r, path+"[]", fixed)})
	}
	var out schemaMap
	if len(alts) == 1 {
		out = alts[0].(schemaMap)
	} else {
		out = schemaMap{"anyOf": alts}
	}
	if f.def != nil {
		out["default"] = *f.def
	}
	return out
}

// DescribeSchema returns the JSON Schema (draft 2020-12) of the resource
// file as the loader defines it, without descriptions: a tree of maps,
// slices, strings, numbers and booleans. Package schema adds descriptions.
func DescribeSchema() map[string]any {
	props := schemaMap{
		"_format_version": schemaMap{"type": "string", "const": FormatVersion},
	}
	for _, coll := range Collections {
		x := &explorer{coll: coll, dec: collectionTable[coll], memo: map[string]*runResult{}}
		entry := x.explore(&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}, "", map[string]bool{})
		props[coll] = schemaMap{"type": []any{"array", "null"}, "items": entry}
	}
	return schemaMap{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"required":             []any{"_format_version"},
		"properties":           props,
		"additionalProperties": false,
	}
}
