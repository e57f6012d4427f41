package schema

import (
	"strings"
)

// FieldDocs maps "section/field.path" to the Rule text of its row in a field
// table of docs/CONFIG.md. The section is the collection (a `## name`
// heading), optionally followed by "#kind" inside a `#### `kind“ heading of
// that collection; other headings keep the current section. Paths are as
// the tables write them: dotted, with [] for list items.
type FieldDocs map[string]string

// ParseFieldTables reads every Markdown table whose header starts with
// "Field" and keeps its Rule column (the last column, or the one before a
// trailing Source column). A field cell may name several fields:
// `a` / `b`, `x.y`, `.z` (a sibling of the previous name), `t_min/_max`.
func ParseFieldTables(md string, collections []string) FieldDocs {
	out := FieldDocs{}
	isColl := map[string]bool{}
	for _, c := range collections {
		isColl[c] = true
	}
	section, kind := "", ""
	var header []string
	for _, line := range strings.Split(md, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "#") {
			level := len(line) - len(strings.TrimLeft(line, "#"))
			title := strings.Trim(strings.TrimSpace(line[level:]), "`")
			switch {
			case level <= 2:
				section, kind = title, ""
			case level == 3 && isColl[title]:
				section, kind = title, ""
			case level == 3:
				kind = ""
			case level == 4 && strings.HasPrefix(strings.TrimSpace(line[level:]), "`"):
				kind = title
			}
			header = nil
			continue
		}
		if !strings.HasPrefix(line, "|") {
			header = nil
			continue
		}
		cells := splitRow(line)
		if header == nil {
			if len(cells) > 1 && cells[0] == "Field" {
				header = cells
			}
			continue
		}
		if len(cells) > 0 && strings.Trim(cells[0], "-: ") == "" {
			continue // the |---| line
		}
		rule := -1
		for i, h := range header {
			if h == "Rule" {
				rule = i
			}
		}
		if rule < 0 || rule >= len(cells) || len(cells) == 0 {
			continue
		}
		desc := strings.TrimSpace(cells[rule])
		if desc == "" {
			// Some rows say everything in Type/Default; use the whole row.
			desc = strings.TrimSpace(strings.Join(cells[1:], " "))
		}
		key := section
		if kind != "" {
			key += "#" + kind
		}
		for _, f := range fieldNames(cells[0]) {
			if _, dup := out[key+"/"+f]; !dup {
				out[key+"/"+f] = desc
			}
		}
	}
	return out
}

// splitRow splits a table row on unescaped pipes outside backticks.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	code := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			code = !code
			cur.WriteByte(c)
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// fieldNames lists the backticked names of a field cell.
func fieldNames(cell string) []string {
	var out []string
	prev := ""
	for {
		i := strings.IndexByte(cell, '`')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(cell[i+1:], '`')
		if j < 0 {
			return out
		}
		tok := strings.TrimSpace(cell[i+1 : i+1+j])
		cell = cell[i+1+j+1:]
		if tok == "" || strings.ContainsAny(tok, " :{}") {
			continue
		}
		if strings.HasPrefix(tok, ".") && prev != "" {
			if k := strings.LastIndexByte(prev, '.'); k >= 0 {
				tok = prev[:k] + tok
			} else {
				tok = tok[1:]
			}
		}
		if a, b, ok := strings.Cut(tok, "/"); ok {
			// temperature_min/_max → temperature_min, temperature_max
			out = append(out, a)
			if strings.HasPrefix(b, "_") {
				if k := strings.LastIndexByte(a, '_'); k >= 0 {
					b = a[:k] + b
				}
			}
			tok = b
		}
		out = append(out, tok)
		prev = tok
	}
}
