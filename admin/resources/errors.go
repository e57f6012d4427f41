package resources

import (
	"strconv"
	"strings"
)

// Error is one load error. It names where the problem is (collection, entry
// index, identity when known, field path) and what is wrong. It never holds a
// variable's value, a credential or a hash.
type Error struct {
	Collection string // "" for file-level errors
	Index      int    // entry index inside Collection; -1 when not about one entry
	IDField    string // identity field name, e.g. "display_name"
	ID         string // identity value when known
	Path       string // dotted field path inside the entry, e.g. "routing.targets[0].model"
	Msg        string
	// Line and Column locate the YAML node the error is about (1-based;
	// 0 when unknown, e.g. an error about the file as a whole).
	Line, Column int
}

// At renders the error prefixed with file:line:column (file:line when the
// column is unknown, file alone when the line is), the form editors and
// compilers use, so terminals and CI logs link to the spot.
func (e Error) At(file string) string {
	var b strings.Builder
	b.WriteString(file)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	b.WriteString(": ")
	b.WriteString(e.String())
	return b.String()
}

// String renders the error on one line:
//
//	models[3] (display_name=gpt-fast): routing.targets[0].model: unknown model "gpt-x"; available: a, b
func (e Error) String() string {
	var b strings.Builder
	if e.Collection != "" {
		b.WriteString(e.Collection)
		if e.Index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.Index))
			b.WriteByte(']')
		}
		if e.ID != "" {
			b.WriteString(" (")
			b.WriteString(e.IDField)
			b.WriteByte('=')
			b.WriteString(e.ID)
			b.WriteByte(')')
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e Error) Error() string { return e.String() }

// LoadError is the aggregated report of a rejected file.
type LoadError struct {
	File   string // the resource file, when loaded from one
	Errors []Error
}

func (e *LoadError) Error() string {
	lines := make([]string, len(e.Errors))
	for i := range e.Errors {
		if e.File != "" {
			lines[i] = e.Errors[i].At(e.File)
		} else {
			lines[i] = e.Errors[i].String()
		}
	}
	return strings.Join(lines, "\n")
}

// quoteList renders names for "available: a, b" hints, capped so that a file
// with 10,000 keys does not print them all.
func quoteList(names []string) string {
	const max = 20
	if len(names) == 0 {
		return "(none)"
	}
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:max], ", ") + ", ... (" + strconv.Itoa(len(names)-max) + " more)"
}
