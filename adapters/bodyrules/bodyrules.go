// Package bodyrules applies a provider key's body rules — request
// param_renames, param_constraints (temperature bounds),
// default_body_fields and response.content_list_to_string — to an upstream
// request body, on the raw bytes (gw/sse/rawjson), whatever the adapter
// family.
//
// The rules are written in the upstream's own wire format: they run on the
// body as it goes upstream (the converted body of a chat caller on a
// Messages-protocol key, a native Messages or Responses body), after gw's
// own edits, so param_renames has the last word. Every family calls Apply;
// the openai family fuses the same rules into its one-pass chat editor and
// shares Clamp and AppendFlatText with it.
//
// Rules are compiled once per provider key; Apply allocates nothing in
// steady state (buffers come from a pooled Scratch).
package bodyrules

import (
	"errors"
	"math"
	"sync"

	"gw/sse/rawjson"
)

// Config is a provider key's body rules as the snapshot compiler fills them.
// It must not change once compiled.
type Config struct {
	// ParamRenames are request.param_renames in file order.
	ParamRenames []Rename
	// TemperatureMin and TemperatureMax are
	// request.param_constraints.temperature_min/max; nil when unset.
	TemperatureMin *float64
	TemperatureMax *float64
	// DefaultBodyFields are request.default_body_fields in file order.
	DefaultBodyFields []Field
	// ContentListToString is response.content_list_to_string: text-only
	// content lists of messages[*].content are sent as one string.
	ContentListToString bool
}

// Rename is one param_renames entry: the top-level body member From is
// renamed To.
type Rename struct {
	From, To string
}

// Field is one default_body_fields entry: a top-level member and its value
// as raw JSON.
type Field struct {
	Key   string
	Value []byte
}

// Set selects rules of a Rules value; a surface applies those that mean
// something in its wire format.
type Set uint8

// The rules.
const (
	Flatten  Set = 1 << iota // content_list_to_string
	Renames                  // param_renames
	Clamp                    // temperature_min / temperature_max
	Defaults                 // default_body_fields
	All      = Flatten | Renames | Clamp | Defaults
)

// Rules are the compiled body rules of one provider key. Immutable; a nil
// *Rules applies nothing.
type Rules struct {
	renames    []Rename
	clamp      bool
	tmin, tmax float64 // -Inf / +Inf when unset
	defaults   []Field
	flatten    bool
}

// Compile compiles c. Default fields named in reserved (the members gw
// itself decides, such as model and stream) and empty values are dropped.
// It returns nil when c sets no rule.
func Compile(c *Config, reserved ...string) *Rules {
	r := &Rules{renames: c.ParamRenames, tmin: math.Inf(-1), tmax: math.Inf(1), flatten: c.ContentListToString}
	if c.TemperatureMin != nil {
		r.tmin, r.clamp = *c.TemperatureMin, true
	}
	if c.TemperatureMax != nil {
		r.tmax, r.clamp = *c.TemperatureMax, true
	}
next:
	for _, f := range c.DefaultBodyFields {
		if len(f.Value) == 0 {
			continue
		}
		for _, k := range reserved {
			if f.Key == k {
				continue next
			}
		}
		r.defaults = append(r.defaults, f)
	}
	if !r.clamp && !r.flatten && len(r.renames) == 0 && len(r.defaults) == 0 {
		return nil
	}
	return r
}

// Has reports whether r has a rule of set.
func (r *Rules) Has(set Set) bool {
	if r == nil {
		return false
	}
	return (set&Flatten != 0 && r.flatten) || (set&Renames != 0 && len(r.renames) > 0) ||
		(set&Clamp != 0 && r.clamp) || (set&Defaults != 0 && len(r.defaults) > 0)
}

// RenameList returns the param_renames in file order.
func (r *Rules) RenameList() []Rename {
	if r == nil {
		return nil
	}
	return r.renames
}

// DefaultList returns the default body fields in file order.
func (r *Rules) DefaultList() []Field {
	if r == nil {
		return nil
	}
	return r.defaults
}

// FlattensContent reports content_list_to_string.
func (r *Rules) FlattensContent() bool { return r != nil && r.flatten }

// Clamps reports whether a temperature bound is set.
func (r *Rules) Clamps() bool { return r != nil && r.clamp }

// ErrBody means the body is not a JSON object the rules can edit.
var ErrBody = errors.New("bodyrules: body is not a JSON object")

// Scratch holds the buffers of one Apply call. Acquire it with
// AcquireScratch and give it back with ReleaseScratch once the body Apply
// returned has been copied out.
type Scratch struct {
	bufs [2][]byte
	msgs []byte
	elem []byte
	flat []byte
	text []byte
	temp []byte
	vals [][]byte
	keys []string
}

// maxKeep bounds the buffers a pooled Scratch keeps.
const maxKeep = 1 << 20

var scratchPool = sync.Pool{New: func() any { return new(Scratch) }}

// AcquireScratch returns a pooled Scratch.
func AcquireScratch() *Scratch { return scratchPool.Get().(*Scratch) }

// ReleaseScratch returns s to the pool; what Apply returned is invalid
// afterwards.
func ReleaseScratch(s *Scratch) {
	for _, b := range []*[]byte{&s.bufs[0], &s.bufs[1], &s.msgs, &s.elem, &s.flat, &s.text, &s.temp} {
		if cap(*b) > maxKeep {
			*b = nil
		} else {
			*b = (*b)[:0]
		}
	}
	clear(s.vals)
	s.keys = s.keys[:0]
	scratchPool.Put(s)
}

// Apply returns body with the rules of set applied, in this order:
// content lists flattened (messages[*].content), param_renames in file
// order (each rename reads the result of the previous one), the
// temperature clamp (on the member named temperature after renames), and
// the default fields absent after renames, appended in file order. When no
// rule changes anything, body itself is returned; otherwise the result
// lives in s and is valid until s is released. body is never written.
func (r *Rules) Apply(body []byte, set Set, s *Scratch) ([]byte, error) {
	if !r.Has(set) {
		return body, nil
	}
	cur, n := body, 0
	commit := func(out []byte, err error) error {
		if err != nil {
			return ErrBody
		}
		s.bufs[n] = out
		cur = out
		n ^= 1
		return nil
	}
	if set&Flatten != 0 && r.flatten {
		msgs, kind, ok := rawjson.Get(cur, "messages")
		if ok && kind == rawjson.Array {
			if out, changed := r.flattenMessages(s, msgs); changed {
				if err := commit(rawjson.Set(s.bufs[n][:0], cur, "messages", out)); err != nil {
					return body, err
				}
			}
		}
	}
	if set&Renames != 0 {
		// One scan finds which sources are present; a source absent from
		// the body is skipped while no earlier rename could have made it.
		keys := s.keys[:0]
		for _, rn := range r.renames {
			keys = append(keys, rn.From)
		}
		s.keys = keys
		if cap(s.vals) < len(keys) {
			s.vals = make([][]byte, len(keys))
		}
		vals := s.vals[:len(keys)]
		if len(keys) > 0 {
			if err := rawjson.ScanTop(cur, keys, vals); err != nil {
				return body, ErrBody
			}
		}
		moved := false
		for i, rn := range r.renames {
			if !moved && vals[i] == nil {
				continue
			}
			if err := commit(rawjson.Rename(s.bufs[n][:0], cur, rn.From, rn.To)); err != nil {
				return body, err
			}
			moved = true
		}
		clear(vals)
	}
	if set&Clamp != 0 && r.clamp {
		if t, _, ok := rawjson.Get(cur, "temperature"); ok {
			if c := r.Clamp(s.temp[:0], t); c != nil {
				s.temp = c
				if err := commit(rawjson.Set(s.bufs[n][:0], cur, "temperature", c)); err != nil {
					return body, err
				}
			}
		}
	}
	if set&Defaults != 0 {
		for _, f := range r.defaults {
			if _, _, ok := rawjson.Get(cur, f.Key); ok {
				continue
			}
			if err := commit(rawjson.SetIfAbsent(s.bufs[n][:0], cur, f.Key, f.Value)); err != nil {
				return body, err
			}
		}
	}
	if rawjson.KindOf(cur) != rawjson.Object {
		return body, ErrBody
	}
	return cur, nil
}

// Clamp appends to dst the temperature raw clamped to the bounds and
// returns it, or returns nil when raw is not a number or already within
// them (or no bound is set).
func (r *Rules) Clamp(dst, raw []byte) []byte {
	if r == nil || !r.clamp || rawjson.KindOf(raw) != rawjson.Number {
		return nil
	}
	f, ok := rawjson.ParseFloat(raw)
	if !ok {
		return nil
	}
	c := min(max(f, r.tmin), r.tmax)
	if c == f || math.IsInf(c, 0) || math.IsNaN(c) {
		return nil
	}
	return rawjson.AppendFloat(dst, c)
}

// flattenMessages rewrites the messages array arr into s.msgs with every
// text-only content list as one string; changed is false when nothing was
// flattened.
func (r *Rules) flattenMessages(s *Scratch, arr []byte) (out []byte, changed bool) {
	out = append(s.msgs[:0], '[')
	err := rawjson.ForEachElem(arr, func(i int, elem []byte, kind rawjson.Kind) bool {
		if i > 0 {
			out = append(out, ',')
		}
		var c bool
		out, c = flattenMessage(out, elem, kind, s)
		changed = changed || c
		return true
	})
	out = append(out, ']')
	s.msgs = out
	return out, changed && err == nil
}

var messageContent = []string{"content"}

// flattenMessage appends message elem to dst with its content replaced by
// one string when it is a text-only content list (see AppendFlatText), and
// reports whether it did. s provides the buffers.
func flattenMessage(dst, elem []byte, kind rawjson.Kind, s *Scratch) ([]byte, bool) {
	if kind != rawjson.Object {
		return append(dst, elem...), false
	}
	var v [1][]byte
	if rawjson.ScanTop(elem, messageContent, v[:]) != nil || rawjson.KindOf(v[0]) != rawjson.Array {
		return append(dst, elem...), false
	}
	var flat []byte
	var ok bool
	if flat, s.text, ok = AppendFlatText(s.flat[:0], s.text, v[0]); !ok {
		return append(dst, elem...), false
	}
	s.flat = flat
	out, err := rawjson.Set(dst, elem, "content", flat)
	if err != nil {
		return append(dst, elem...), false // Set left dst as it was
	}
	return out, true
}

var blockKeys = []string{"type", "text"}

// AppendFlatText appends to dst one JSON string holding the texts of the
// content list arr concatenated without separator, and reports true, when
// arr is a non-empty array of {"type":"text","text":"..."} blocks (other
// members of a block, such as cache_control, are dropped). Otherwise it
// reports false and dst must be discarded. Texts are unescaped into text
// and the whole is quoted again, so escapes split across blocks (half of a
// surrogate pair) read as they would have separately. text is returned for
// reuse.
//
// The texts are joined as they are: a caller who split one prompt into
// several text blocks meant one text, and this is what the caller would
// have sent as a string (the rule the chat-completions APIs that accept
// only strings expect).
func AppendFlatText(dst, text, arr []byte) (out, textOut []byte, ok bool) {
	text = text[:0]
	ok = true
	n := 0
	err := rawjson.ForEachElem(arr, func(_ int, b []byte, k rawjson.Kind) bool {
		var v [2][]byte // type, text
		if k != rawjson.Object || rawjson.ScanTop(b, blockKeys, v[:]) != nil ||
			rawjson.KindOf(v[0]) != rawjson.String || !rawjson.StringEquals(v[0], "text") ||
			rawjson.KindOf(v[1]) != rawjson.String {
			ok = false
			return false
		}
		var err error
		if text, err = rawjson.AppendUnquote(text, v[1]); err != nil {
			ok = false
			return false
		}
		n++
		return true
	})
	if err != nil || !ok || n == 0 {
		return dst, text, false
	}
	return rawjson.AppendQuoteBytes(dst, text), text, true
}
