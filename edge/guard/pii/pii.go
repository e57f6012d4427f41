// Package pii is the guardrail kind pii: nine built-in detectors (hand-
// written scanners, detect.go) and custom RE2 patterns, each masking or
// blocking what it finds.
//
// Verdict rules (docs/GUARDRAILS_KINDS.md):
//   - A block-action hit in any text blocks (block wins over mask). Rule is
//     the first block entry, in configuration order (detectors, then custom
//     patterns), that hits the first text with a block hit.
//   - Otherwise every text with mask hits is rewritten: each matched
//     fragment becomes its entry's replacement ([EMAIL_REDACTED], or a
//     custom pattern's replacement used literally: "$1" is not expanded).
//     For a custom regex with capture groups only group 1's span is
//     replaced (a match where group 1 did not take part, or took part
//     empty, replaces nothing). Overlapping fragments are merged into one
//     and take the replacement of the one that starts first (configuration
//     order on a tie). Rule is the first mask entry, in configuration
//     order, that hits the first rewritten text.
//   - Rule is a detector or custom pattern name, never the matched value.
//
// Nothing matching costs no allocation. Masking writes into Verdict.Buf and
// Masks, reusing their capacity; a custom pattern's hit allocates its match
// indexes (Go's regexp has no find API taking a destination).
package pii

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"gw/admin/resources"
	"gw/edge/guard"
)

// Interface guards.
var _ guard.Checker = (*Checker)(nil)

// Checker is a compiled pii guardrail, immutable and safe for concurrent
// use.
type Checker struct {
	entries []entry // detectors in configuration order, then custom patterns
	slot    [numDetectors]int32
	custom  []int // entry indexes of the custom patterns
	scratch sync.Pool
}

type entry struct {
	name        string
	block       bool
	replacement []byte
	re          *regexp.Regexp // custom patterns only
	group       bool           // custom: replace group 1 only
}

// scratch is the per-Check working state, pooled so a Check allocates
// nothing in steady state.
type scratch struct {
	sink sink
}

// New compiles g, whose Options must be *resources.PIIOptions.
func New(g *resources.Guardrail) (guard.Checker, error) {
	opts, ok := g.Options.(*resources.PIIOptions)
	if !ok || opts == nil {
		return nil, errors.New("cannot compile pii guardrail " + strconv.Quote(g.Name) + ": options are not pii options")
	}
	c := &Checker{}
	for i := range c.slot {
		c.slot[i] = -1
	}
	for i, d := range opts.Detectors {
		id := -1
		for k, n := range resources.PIIDetectorNames {
			if n == d.Name {
				id = k
			}
		}
		where := "cannot compile pii guardrail " + strconv.Quote(g.Name) + ": detectors[" + strconv.Itoa(i) + "]: "
		switch {
		case id < 0:
			return nil, errors.New(where + "unknown detector " + strconv.Quote(d.Name))
		case c.slot[id] >= 0:
			return nil, errors.New(where + "detector " + strconv.Quote(d.Name) + " is listed twice")
		}
		blk, err := isBlock(d.Action)
		if err != nil {
			return nil, errors.New(where + err.Error())
		}
		c.slot[id] = int32(len(c.entries))
		c.entries = append(c.entries, entry{name: d.Name, block: blk, replacement: []byte(d.Replacement)})
	}
	for i, p := range opts.CustomPatterns {
		where := "cannot compile pii guardrail " + strconv.Quote(g.Name) + ": custom_patterns[" + strconv.Itoa(i) + "]: "
		if p.Regexp == nil {
			return nil, errors.New(where + "regex is not compiled")
		}
		blk, err := isBlock(p.Action)
		if err != nil {
			return nil, errors.New(where + err.Error())
		}
		c.custom = append(c.custom, len(c.entries))
		c.entries = append(c.entries, entry{name: p.Name, block: blk, replacement: []byte(p.Replacement),
			re: p.Regexp, group: p.Regexp.NumSubexp() > 0})
	}
	n := len(c.entries)
	slot := c.slot
	c.scratch.New = func() any {
		s := &scratch{}
		s.sink.slot = slot
		s.sink.hit = make([]bool, n)
		return s
	}
	return c, nil
}

func isBlock(action string) (bool, error) {
	switch action {
	case resources.ActionBlock:
		return true, nil
	case resources.ActionMask:
		return false, nil
	}
	return false, errors.New("unknown action " + strconv.Quote(action))
}

// Check judges each text; see the package comment for the verdict rules.
func (c *Checker) Check(_ context.Context, req *guard.Request, v *guard.Verdict) error {
	if len(c.entries) == 0 {
		return nil
	}
	sc := c.scratch.Get().(*scratch)
	defer c.scratch.Put(sc)
	s := &sc.sink
	base := len(v.Buf)
	maskRule := ""
	for ti := range req.Texts {
		data := req.Texts[ti].Data
		s.spans = s.spans[:0]
		clear(s.hit)
		scanBuiltins(data, s)
		c.scanCustom(data, s)
		for e := range c.entries {
			if s.hit[e] && c.entries[e].block {
				v.Action, v.Rule = guard.Block, c.entries[e].name
				v.Masks, v.Buf = v.Masks[:0], v.Buf[:base]
				return nil
			}
		}
		if len(s.spans) == 0 {
			continue
		}
		if maskRule == "" {
			for e := range c.entries {
				if s.hit[e] {
					maskRule = c.entries[e].name
					break
				}
			}
		}
		start := len(v.Buf)
		v.Buf = c.appendMasked(v.Buf, data, s.spans)
		// Data is re-sliced below, once Buf has stopped growing.
		v.Masks = append(v.Masks, guard.Mask{Index: ti, Data: v.Buf[start:len(v.Buf):len(v.Buf)]})
	}
	if maskRule == "" {
		return nil
	}
	off := base
	for k := range v.Masks {
		n := len(v.Masks[k].Data)
		v.Masks[k].Data = v.Buf[off : off+n : off+n]
		off += n
	}
	v.Action, v.Rule = guard.Rewrite, maskRule
	return nil
}

// scanCustom runs the custom patterns: a block pattern needs only to know
// whether it matches; a mask pattern's spans are its matches (group 1 when
// the regex has groups). Match runs first so texts it does not match
// allocate nothing.
func (c *Checker) scanCustom(data []byte, s *sink) {
	for _, e := range c.custom {
		en := &c.entries[e]
		if !en.re.Match(data) {
			continue
		}
		if en.block {
			s.hit[e] = true
			continue
		}
		for _, m := range en.re.FindAllSubmatchIndex(data, -1) {
			a, b := m[0], m[1]
			if en.group {
				a, b = m[2], m[3]
			}
			if a < 0 || b <= a {
				continue
			}
			s.hit[e] = true
			s.spans = append(s.spans, span{a, b, int32(e)})
		}
	}
}

// appendMasked appends data to dst with the spans replaced: spans are
// ordered by start (entry order on a tie) and overlapping ones merged into
// the first.
func (c *Checker) appendMasked(dst, data []byte, spans []span) []byte {
	slices.SortFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return int(a.entry - b.entry)
	})
	last := 0
	for k := 0; k < len(spans); {
		sp := spans[k]
		end := sp.end
		k++
		for k < len(spans) && spans[k].start < end {
			end = max(end, spans[k].end)
			k++
		}
		dst = append(dst, data[last:sp.start]...)
		dst = append(dst, c.entries[sp.entry].replacement...)
		last = end
	}
	return append(dst, data[last:]...)
}
