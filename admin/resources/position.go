package resources

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Positions: every load error and warning carries the line and column of
// the YAML node it is about, found after the fact by walking the parsed
// document along the error's collection, entry index and field path, so
// no decoder has to thread nodes through its messages. A path that leaves
// the document (a required field that is absent) stops at the deepest node
// that exists: the mapping the field is missing from.

// locate sets e.Line and e.Column from root.
func locate(root *yaml.Node, e *Error) {
	if e.Line > 0 || root == nil {
		return
	}
	n := root
	if e.Collection != "" {
		v, k := mapLookup(n, e.Collection)
		if v == nil {
			return
		}
		n = v
		if e.Index < 0 {
			if e.Path == "" {
				n = k
			}
		} else if n = resolve(n); n.Kind == yaml.SequenceNode && e.Index < len(n.Content) {
			n = n.Content[e.Index]
		}
	}
	n = walkPath(n, e.Path)
	e.Line, e.Column = n.Line, n.Column
}

// walkPath follows a dotted field path ("routing.targets[0].model") from n
// and returns the deepest node reached; the last field's key node when the
// path ends on a field (so "unknown field" points at the key). A mapping
// key holding dots (claim names, header templates) matches as one field.
func walkPath(n *yaml.Node, path string) *yaml.Node {
	if path == "" {
		return n
	}
	segs := strings.Split(path, ".")
	for i := 0; i < len(segs); {
		m := resolve(n)
		if m.Kind != yaml.MappingNode {
			return n
		}
		// The longest run of segments that is one key wins.
		var v, k *yaml.Node
		j := len(segs)
		for ; j > i; j-- {
			name, _ := splitIndexes(strings.Join(segs[i:j], "."))
			if v, k = mapLookup(m, name); v != nil {
				break
			}
		}
		if v == nil {
			return n
		}
		_, idx := splitIndexes(segs[j-1])
		if len(idx) == 0 && j == len(segs) {
			return k
		}
		n = v
		for _, x := range idx {
			s := resolve(n)
			if s.Kind != yaml.SequenceNode || x >= len(s.Content) {
				return n
			}
			n = s.Content[x]
		}
		i = j
	}
	return n
}

// splitIndexes splits "targets[0][1]" into "targets" and [0 1].
func splitIndexes(seg string) (string, []int) {
	b := strings.IndexByte(seg, '[')
	if b < 0 || !strings.HasSuffix(seg, "]") {
		return seg, nil
	}
	var idx []int
	for _, p := range strings.Split(seg[b+1:len(seg)-1], "][") {
		x, err := strconv.Atoi(p)
		if err != nil {
			return seg, nil
		}
		idx = append(idx, x)
	}
	return seg[:b], idx
}

// mapLookup returns the value and key nodes of key in mapping n.
func mapLookup(n *yaml.Node, key string) (v, k *yaml.Node) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], n.Content[i]
		}
	}
	return nil, nil
}

// yamlErrorLine reads the line number the YAML library writes into its
// syntax errors ("yaml: line 7: ..."); 0 when there is none.
func yamlErrorLine(msg string) int {
	i := strings.Index(msg, "line ")
	if i < 0 {
		return 0
	}
	j := i + len("line ")
	k := j
	for k < len(msg) && msg[k] >= '0' && msg[k] <= '9' {
		k++
	}
	n, _ := strconv.Atoi(msg[j:k])
	return n
}

// suggest returns the name in known closest to name when it is close
// enough to be a misspelling: at most a third of name's length apart (at
// least 1), counting a swap of two neighbours as one edit; "" otherwise.
func suggest(name string, known []string) string {
	best, bestD := "", max(1, len(name)/3)+1
	for _, k := range known {
		if k == name {
			continue
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance of a and b
// (insertions, deletions, substitutions and swaps of neighbours, in bytes).
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			d := min(rows[i-1][j-1]+c, rows[i-1][j]+1, rows[i][j-1]+1)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}
