package resources

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// parseDocument parses data as exactly one YAML document.
func parseDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("file is empty; it must hold one YAML mapping with _format_version: \"1\"")
		}
		return nil, errors.New(cleanYAMLError(err))
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, errors.New("file holds more than one YAML document (\"---\" separators are not supported); " + cleanYAMLError(err))
	default:
		return nil, errors.New("file holds more than one YAML document (\"---\" separators are not supported); merge them into one")
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], nil
	}
	return &doc, nil
}

// cleanYAMLError strips the library prefix; YAML syntax errors quote at most
// a token of the input, never an interpolated value (interpolation runs later).
func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: ")
	return "invalid YAML: " + s
}

// jsonValue converts a YAML value to JSON bytes, interpolating strings.
// Mapping keys must be strings; they are not interpolated.
func (d *decoder) jsonValue(e *entry, path string, n *yaml.Node) (json.RawMessage, bool) {
	v, ok := d.anyValue(e, path, n)
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		d.errAt(e, path, "cannot be expressed as JSON")
		return nil, false
	}
	return b, true
}

func (d *decoder) anyValue(e *entry, path string, n *yaml.Node) (any, bool) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		o := d.newObj(e, path, n)
		if o == nil {
			return nil, false
		}
		// json.Marshal sorts map keys; keep file order with an ordered encoder instead.
		m := orderedObject{}
		good := true
		for i, k := range o.keys {
			o.used[i] = true
			if k.ShortTag() == "!!merge" {
				d.errAt(e, joinPath(path, "<<"), "unknown field (YAML merge keys are not expanded)")
				good = false
				continue
			}
			v, ok := d.anyValue(e, joinPath(path, k.Value), o.vals[i])
			good = good && ok
			m = append(m, orderedField{k.Value, v})
		}
		return m, good
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		good := true
		for i, c := range n.Content {
			v, ok := d.anyValue(e, indexPath(path, i), c)
			good = good && ok
			out[i] = v
		}
		return out, good
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			s, _, ok := d.scalarString(e, path, n)
			return s, ok
		case "!!int":
			v, err := strconv.ParseInt(n.Value, 0, 64)
			if err != nil {
				d.errAt(e, path, "integer out of range")
				return nil, false
			}
			return v, true
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				d.errAt(e, path, "must be a finite number")
				return nil, false
			}
			return f, true
		case "!!bool":
			return n.Value == "true", true
		case "!!null":
			return nil, true
		}
	}
	d.errAt(e, path, "must be a JSON-compatible value, got "+kindName(n))
	return nil, false
}

type orderedField struct {
	k string
	v any
}

type orderedObject []orderedField

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
