package snapshot

import (
	"gw/admin/resources"
	"gw/sse/rawjson"
)

// EffortMap is a compiled effort_mapping: looked up once the final target is
// chosen — the exact caller value first, then "*"; key "" matches a request
// without `reasoning_effort`. A nil value removes the field.
type EffortMap struct {
	exact   map[string]effortValue
	star    effortValue
	hasStar bool
}

type effortValue struct {
	remove bool
	json   []byte // the upstream value as a JSON string literal
}

func compileEffort(rules []resources.EffortRule) *EffortMap {
	if len(rules) == 0 {
		return nil
	}
	m := &EffortMap{exact: make(map[string]effortValue, len(rules))}
	for _, r := range rules {
		v := effortValue{remove: r.To == nil}
		if r.To != nil {
			v.json = rawjson.AppendQuote(nil, *r.To)
		}
		if r.From == "*" {
			m.star, m.hasStar = v, true
			continue
		}
		m.exact[r.From] = v
	}
	return m
}

const effortField = "reasoning_effort"

// Apply rewrites body's reasoning_effort into dst and returns the body to
// send; it returns body itself when no rule applies. dst must not overlap body.
func (m *EffortMap) Apply(dst, body []byte) []byte {
	raw, kind, present := rawjson.Get(body, effortField)
	var buf [32]byte
	key := buf[:0]
	if present && kind == rawjson.String {
		k, err := rawjson.AppendUnquote(buf[:0], raw)
		if err != nil {
			return body
		}
		key = k
	} else if present && kind != rawjson.Null {
		return body // not a string: leave it for the upstream to reject
	}
	v, ok := m.exact[string(key)] // no allocation: the conversion is only a map key
	if !ok && m.hasStar && present && kind == rawjson.String {
		v, ok = m.star, true
	}
	if !ok {
		return body
	}
	var out []byte
	var err error
	if v.remove {
		if !present {
			return body
		}
		out, err = rawjson.Delete(dst, body, effortField)
	} else {
		out, err = rawjson.Set(dst, body, effortField, v.json)
	}
	if err != nil {
		return body
	}
	return out
}
