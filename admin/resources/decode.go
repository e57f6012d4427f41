package resources

import (
	"math"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// decoder carries the error list and environment through one load.
type decoder struct {
	env      Env
	errs     []Error
	warnings []Error
	fields   []fieldUse // every non-null field read, for Resources.Fields
	// desc is nil except when the schema is being produced (describe.go);
	// every accessor then records what it expects. A nil check is the only
	// cost on a normal load.
	desc *describer
}

// fieldUse is one field written in an entry: path with list indexes dropped.
type fieldUse struct {
	e    *entry
	path string
}

// FieldUse is one field written in the file (non-null), for the list of
// configuration without runtime effect.
type FieldUse struct {
	Collection string
	Index      int
	IDField    string // the entry's identity field and value, for messages
	ID         string
	// Path is the field's dotted path in the entry with list indexes
	// dropped: "routing.targets[].model".
	Path string
}

// NormalizePath drops list indexes from a field path: a[3].b → a[].b.
func NormalizePath(p string) string {
	if strings.IndexByte(p, '[') < 0 {
		return p
	}
	b := make([]byte, 0, len(p))
	skip := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '[':
			skip = true
			b = append(b, c)
		case c == ']':
			skip = false
			b = append(b, c)
		case !skip:
			b = append(b, c)
		}
	}
	return string(b)
}

// entry is the error context of one collection entry.
type entry struct {
	coll    string
	idx     int
	idField string
	id      string
}

func (e *entry) setID(field, id string) {
	e.idField, e.id = field, id
}

// obj reads fields of one YAML mapping. Each read marks the key as known;
// finish reports every key nobody read as an unknown field.
type obj struct {
	d    *decoder
	e    *entry
	path string
	keys []*yaml.Node
	vals []*yaml.Node
	used []bool
	// asked are the field names the decoder looked up, present or not: the
	// valid names an unknown field may be a misspelling of.
	asked []string
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func (d *decoder) errAt(e *entry, path, msg string) {
	er := Error{Path: path, Msg: msg, Index: -1}
	if e != nil {
		er.Collection, er.Index, er.IDField, er.ID = e.coll, e.idx, e.idField, e.id
	}
	d.errs = append(d.errs, er)
}

func (d *decoder) warnAt(e *entry, path, msg string) {
	er := Error{Path: path, Msg: msg, Index: -1}
	if e != nil {
		er.Collection, er.Index, er.IDField, er.ID = e.coll, e.idx, e.idField, e.id
	}
	d.warnings = append(d.warnings, er)
}

// kindName describes a node for "must be a string, got a sequence" messages.
// It never includes the node's value.
func kindName(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		case "!!binary":
			return "binary data"
		case "!!timestamp":
			return "a timestamp"
		}
	}
	return "an unsupported YAML value"
}

// newObj opens mapping n. It checks that every key is a string and unique.
// It returns nil (after recording an error) when n is not a mapping.
func (d *decoder) newObj(e *entry, path string, n *yaml.Node) *obj {
	if d.desc != nil {
		d.desc.typ(path, tObject)
	}
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		d.errAt(e, path, "must be a mapping, got "+kindName(n))
		return nil
	}
	o := &obj{d: d, e: e, path: path}
	seen := make(map[string]struct{}, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind != yaml.ScalarNode || (k.ShortTag() != "!!str" && k.ShortTag() != "!!merge") {
			d.errAt(e, path, "mapping keys must be strings, got "+kindName(k))
			continue
		}
		if _, dup := seen[k.Value]; dup {
			d.errAt(e, joinPath(path, k.Value), "duplicate key")
			continue
		}
		seen[k.Value] = struct{}{}
		o.keys = append(o.keys, k)
		o.vals = append(o.vals, n.Content[i+1])
	}
	o.used = make([]bool, len(o.keys))
	return o
}

func (o *obj) fieldPath(name string) string { return joinPath(o.path, name) }

func (o *obj) errf(name, msg string) { o.d.errAt(o.e, o.fieldPath(name), msg) }

func (o *obj) warnf(name, msg string) { o.d.warnAt(o.e, o.fieldPath(name), msg) }

// raw returns the value node of name (aliases resolved) and marks it read.
// Absent and null both give nil.
func (o *obj) raw(name string) *yaml.Node {
	o.asked = append(o.asked, name)
	if o.d.desc != nil {
		o.d.desc.read(o.path, name)
	}
	for i, k := range o.keys {
		if k.Value == name {
			o.used[i] = true
			v := resolve(o.vals[i])
			if isNull(v) {
				return nil
			}
			if o.e != nil {
				o.d.fields = append(o.d.fields, fieldUse{o.e, o.fieldPath(name)})
			}
			return v
		}
	}
	return nil
}

// has reports whether name is present with a non-null value, without marking it read.
func (o *obj) has(name string) bool {
	o.asked = append(o.asked, name)
	if o.d.desc != nil {
		o.d.desc.probe(o.path, name)
	}
	for i, k := range o.keys {
		if k.Value == name {
			return !isNull(o.vals[i])
		}
	}
	return false
}

// present reports whether name is written at all (even as null).
func (o *obj) present(name string) bool {
	o.asked = append(o.asked, name)
	if o.d.desc != nil {
		o.d.desc.probe(o.path, name)
	}
	for _, k := range o.keys {
		if k.Value == name {
			return true
		}
	}
	return false
}

// reject marks name read and reports it as not accepted here, when present.
func (o *obj) reject(name, why string) {
	o.asked = append(o.asked, name)
	if o.d.desc != nil {
		o.d.desc.reject(o.path, name)
	}
	for i, k := range o.keys {
		if k.Value == name {
			o.used[i] = true
			o.errf(name, why)
		}
	}
}

// finish reports every field nobody read.
func (o *obj) finish() {
	if o.d.desc != nil {
		o.d.desc.closed(o.path)
	}
	for i, k := range o.keys {
		if o.used[i] {
			continue
		}
		if k.ShortTag() == "!!merge" || k.Value == "<<" {
			o.errf("<<", "unknown field (YAML merge keys are not expanded)")
			continue
		}
		o.errf(k.Value, o.unknownField(k.Value, ""))
	}
}

// unknownField is the message for an unknown field name, with the nearest
// valid name when it looks like a misspelling of one; what is appended to
// "unknown field" (e.g. " for kind pii").
func (o *obj) unknownField(name, what string) string {
	msg := "unknown field" + what
	if s := suggest(name, o.asked); s != "" {
		msg += "; did you mean `" + s + "`?"
	}
	return msg
}

// keyNames returns the mapping's keys in file order.
func (o *obj) keyNames() []string {
	out := make([]string, len(o.keys))
	for i, k := range o.keys {
		out[i] = k.Value
	}
	return out
}

// scalarString converts a string scalar with interpolation. path names it in errors.
func (d *decoder) scalarString(e *entry, path string, n *yaml.Node) (s string, refs int, ok bool) {
	if d.desc != nil {
		d.desc.typ(path, tString)
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.errAt(e, path, "must be a string, got "+kindName(n))
		return "", 0, false
	}
	s, refs, err := Interpolate(n.Value, d.env)
	if err != nil {
		d.errAt(e, path, err.Error())
		return "", refs, false
	}
	return s, refs, true
}

// str reads an optional string. ok is false when absent or invalid.
func (o *obj) str(name string) (string, bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name), tString)
	}
	n := o.raw(name)
	if n == nil {
		return "", false
	}
	s, _, ok := o.d.scalarString(o.e, o.fieldPath(name), n)
	return s, ok
}

// strRefs is str that also reports how many ${VAR} references the value held.
func (o *obj) strRefs(name string) (s string, refs int, ok bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name), tString)
	}
	n := o.raw(name)
	if n == nil {
		return "", 0, false
	}
	return o.d.scalarString(o.e, o.fieldPath(name), n)
}

// reqStr reads a required non-empty string.
func (o *obj) reqStr(name string) string {
	if o.d.desc != nil {
		o.d.desc.nonEmpty(o.fieldPath(name))
	}
	if !o.has(name) {
		o.raw(name)
		o.errf(name, "required")
		return ""
	}
	s, ok := o.str(name)
	if ok && strings.TrimSpace(s) == "" {
		o.errf(name, "must not be empty")
	}
	return s
}

// optStr reads an optional string into a pointer (nil when absent).
func (o *obj) optStr(name string) *string {
	s, ok := o.str(name)
	if !ok {
		return nil
	}
	return &s
}

// enum reads an optional string that must be one of allowed.
func (o *obj) enum(name string, allowed ...string) (string, bool) {
	if o.d.desc != nil {
		o.d.desc.enum(o.fieldPath(name), allowed)
	}
	n := o.raw(name)
	if n == nil {
		return "", false
	}
	s, refs, ok := o.d.scalarString(o.e, o.fieldPath(name), n)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	shown := "\"" + s + "\""
	if refs > 0 {
		shown = "value" // interpolated: never echo
	}
	o.errf(name, "unknown value "+shown+"; allowed: "+strings.Join(allowed, ", "))
	return "", false
}

func (d *decoder) scalarInt(e *entry, path string, n *yaml.Node) (int64, bool) {
	if d.desc != nil {
		d.desc.typ(path, tInteger)
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.errAt(e, path, "must be an integer, got "+kindName(n))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil {
		d.errAt(e, path, "integer out of range")
		return 0, false
	}
	return v, true
}

// int reads an optional integer. Strings are never coerced.
func (o *obj) int(name string) (int64, bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name), tInteger)
	}
	n := o.raw(name)
	if n == nil {
		return 0, false
	}
	return o.d.scalarInt(o.e, o.fieldPath(name), n)
}

// intRange reads an optional integer in [lo, hi].
func (o *obj) intRange(name string, lo, hi int64) (int64, bool) {
	if o.d.desc != nil {
		o.d.desc.bounds(o.fieldPath(name), float64(lo), float64(hi), lo != math.MinInt64, hi != math.MaxInt64)
	}
	v, ok := o.int(name)
	if !ok {
		return 0, false
	}
	if v < lo || v > hi {
		o.errf(name, "must be between "+strconv.FormatInt(lo, 10)+" and "+strconv.FormatInt(hi, 10)+", got "+strconv.FormatInt(v, 10))
		return 0, false
	}
	return v, true
}

// intMin reads an optional integer that must be >= lo.
func (o *obj) intMin(name string, lo int64) (int64, bool) {
	return o.intRange(name, lo, math.MaxInt64)
}

// optInt reads an optional integer >= lo into a pointer.
func (o *obj) optInt(name string, lo int64) *int64 {
	v, ok := o.intMin(name, lo)
	if !ok {
		return nil
	}
	return &v
}

func (d *decoder) scalarFloat(e *entry, path string, n *yaml.Node) (float64, bool) {
	if d.desc != nil {
		d.desc.typ(path, tNumber)
	}
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") {
		d.errAt(e, path, "must be a number, got "+kindName(n))
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.errAt(e, path, "must be a finite number")
		return 0, false
	}
	return f, true
}

// float reads an optional number.
func (o *obj) float(name string) (float64, bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name), tNumber)
	}
	n := o.raw(name)
	if n == nil {
		return 0, false
	}
	return o.d.scalarFloat(o.e, o.fieldPath(name), n)
}

// floatRange reads an optional number in [lo, hi].
func (o *obj) floatRange(name string, lo, hi float64) (float64, bool) {
	if o.d.desc != nil {
		o.d.desc.bounds(o.fieldPath(name), lo, hi, !math.IsInf(lo, -1), !math.IsInf(hi, 1))
	}
	v, ok := o.float(name)
	if !ok {
		return 0, false
	}
	if v < lo || v > hi {
		o.errf(name, "must be between "+strconv.FormatFloat(lo, 'g', -1, 64)+" and "+strconv.FormatFloat(hi, 'g', -1, 64))
		return 0, false
	}
	return v, true
}

func (o *obj) optFloat(name string) *float64 {
	v, ok := o.float(name)
	if !ok {
		return nil
	}
	return &v
}

// bool reads an optional boolean (only true/false; "yes" is a string).
func (o *obj) bool(name string) (v, ok bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name), tBoolean)
	}
	n := o.raw(name)
	if n == nil {
		return false, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		o.errf(name, "must be a boolean, got "+kindName(n))
		return false, false
	}
	b, err := strconv.ParseBool(n.Value)
	if err != nil {
		o.errf(name, "must be true or false")
		return false, false
	}
	return b, true
}

// boolDefault reads an optional boolean with a default.
func (o *obj) boolDefault(name string, def bool) bool {
	if o.d.desc != nil {
		o.d.desc.def(o.fieldPath(name), def)
	}
	v, ok := o.bool(name)
	if !ok {
		return def
	}
	return v
}

// seq reads an optional sequence; it returns the element nodes (aliases resolved).
func (o *obj) seq(name string) ([]*yaml.Node, bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name), tArray)
	}
	n := o.raw(name)
	if n == nil {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		o.errf(name, "must be a sequence, got "+kindName(n))
		return nil, false
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out, true
}

// strList reads an optional sequence of strings.
func (o *obj) strList(name string) ([]string, bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name)+"[]", tString)
	}
	items, ok := o.seq(name)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	good := true
	for i, it := range items {
		s, _, ok := o.d.scalarString(o.e, indexPath(o.fieldPath(name), i), it)
		if !ok {
			good = false
			continue
		}
		out = append(out, s)
	}
	return out, good
}

// intList reads an optional sequence of integers.
func (o *obj) intList(name string) ([]int64, bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name)+"[]", tInteger)
	}
	items, ok := o.seq(name)
	if !ok {
		return nil, false
	}
	out := make([]int64, 0, len(items))
	good := true
	for i, it := range items {
		v, ok := o.d.scalarInt(o.e, indexPath(o.fieldPath(name), i), it)
		if !ok {
			good = false
			continue
		}
		out = append(out, v)
	}
	return out, good
}

// sub opens a nested mapping field; nil when absent or invalid.
func (o *obj) sub(name string) *obj {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name), tObject)
	}
	n := o.raw(name)
	if n == nil {
		return nil
	}
	return o.d.newObj(o.e, o.fieldPath(name), n)
}

// objs opens each element of a sequence of mappings. Invalid elements are nil.
func (o *obj) objs(name string) ([]*obj, bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name)+"[]", tObject)
	}
	items, ok := o.seq(name)
	if !ok {
		return nil, false
	}
	out := make([]*obj, len(items))
	for i, it := range items {
		out[i] = o.d.newObj(o.e, indexPath(o.fieldPath(name), i), it)
	}
	return out, true
}

// strMap reads an optional mapping of string to string; keys keep file order.
func (o *obj) strMap(name string) ([]KV, bool) {
	if o.d.desc != nil {
		o.d.desc.typ(joinPath(o.fieldPath(name), anyKey), tString)
	}
	m := o.sub(name)
	if m == nil {
		return nil, false
	}
	out := make([]KV, 0, len(m.keys))
	for i, k := range m.keys {
		m.used[i] = true
		v := resolve(m.vals[i])
		s, _, ok := o.d.scalarString(o.e, joinPath(m.path, k.Value), v)
		if !ok {
			continue
		}
		out = append(out, KV{Key: k.Value, Value: s})
	}
	return out, true
}

// KV is one entry of a string map, kept in file order.
type KV struct {
	Key   string
	Value string
}

// strVerbatim reads an optional string without interpolation, for fields that
// hold a variable name themselves (key_env).
func (o *obj) strVerbatim(name string) (string, bool) {
	if o.d.desc != nil {
		o.d.desc.typ(o.fieldPath(name), tString)
	}
	n := o.raw(name)
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		o.errf(name, "must be a string, got "+kindName(n))
		return "", false
	}
	return n.Value, true
}
