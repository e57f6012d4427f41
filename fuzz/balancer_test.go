package fuzz

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gw/balancer"
)

// fuzzBytes hands out bytes, then zeros once data runs out.
type fuzzBytes struct{ data []byte }

func (b *fuzzBytes) next() byte {
	if len(b.data) == 0 {
		return 0
	}
	c := b.data[0]
	b.data = b.data[1:]
	return c
}

// take returns up to n bytes.
func (b *fuzzBytes) take(n int) []byte {
	n = min(n, len(b.data))
	s := b.data[:n]
	b.data = b.data[n:]
	return s
}

var fuzzTagNames = []string{"a", "b", "default"}

// FuzzBalancerOrder builds a group from random weights, priorities, tags,
// costs and states, then checks Order and Pick against a reference
// implementation of the narrowing rules: the order is a permutation of the
// usable targets of the highest usable tier (truncated to MaxAttempts), and
// nothing panics.
func FuzzBalancerOrder(f *testing.F) {
	f.Add([]byte{0, 3, 0x09, 0x11, 0x2a, 0, 0, 0, 1, 'a'})
	f.Add([]byte{1, 70, 0xff, 0x10, 0x08, 0x33, 0x44, 0x55, 2, 3, 'b', ',', 'a', 'k', 'e', 'y'})
	f.Add([]byte{2, 5, 0x01, 0x02, 0x03, 0x04, 0x05, 0x1f, 1, 0, 0})
	f.Add([]byte{3, 66, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0xf0, 0x0f, 0, 5, ' ', ',', 'd', 'e', 'f'})
	f.Add([]byte{4, 8, 0x21, 0x41, 0x81, 0x21, 0x41, 0x81, 0x21, 0x41, 0, 0, 0, 7, 'd', 'e', 'f', 'a', 'u', 'l', 't'})
	f.Add([]byte{5, 2, 0x09, 0x09, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzBytes{data: data}
		names := balancer.Strategies()
		strategy := names[int(in.next())%len(names)]
		n := 1 + int(in.next())%70
		ts := make([]balancer.Target, n)
		for i := range ts {
			b := in.next()
			ts[i] = balancer.Target{
				ID:       "m" + strconv.Itoa(i%50), // some IDs repeat
				Weight:   int64(b & 7),
				Priority: int64(b>>3&3) - 1,
				Cost:     float64(in.next() % 5),
			}
			if ts[i].Cost == 4 {
				ts[i].Cost = math.Inf(1)
			}
			for k, tag := range fuzzTagNames {
				if b>>(5+k)&1 != 0 {
					ts[i].Tags = append(ts[i].Tags, tag)
				}
			}
		}
		var skip balancer.Set
		for i := 0; i < n; i += 8 {
			m := in.next()
			for k := range 8 {
				if m>>k&1 != 0 && i+k < n {
					skip = skip.Add(i + k)
				}
			}
		}
		maxAttempts := int(in.next() % 4)
		tags := in.take(int(in.next() % 16))
		key := in.data

		g, err := balancer.NewGroup(ts, balancer.Options{Strategy: strategy, MaxAttempts: maxAttempts})
		if err != nil {
			t.Fatalf("NewGroup: %s", err)
		}
		for i := range n {
			if i%3 == 0 {
				g.Acquire(i)
			}
			if i%4 != 0 {
				g.Observe(i, time.Duration(int(key0(key, i))+1)*time.Millisecond)
			}
		}

		eligible, want := fuzzReference(ts, string(tags), skip)
		req := &balancer.Request{Key: key, Tags: tags, Skip: skip}
		desc := fmt.Sprintf("%s n=%d tags=%q targets=%+v skip=%v", strategy, n, tags, ts, skip)

		if got := g.Eligible(req, nil); !slices.Equal(got, eligible) && len(got)+len(eligible) > 0 {
			t.Fatalf("%s: Eligible: got %v; want %v", desc, got, eligible)
		}
		got := g.Order(req, nil)
		limit := len(want)
		if maxAttempts > 0 {
			limit = min(limit, maxAttempts)
		}
		if len(got) != limit {
			t.Fatalf("%s: Order %v: %d entries; want %d of %v", desc, got, len(got), limit, want)
		}
		seen := map[int]bool{}
		for _, i := range got {
			if !slices.Contains(want, i) || seen[i] {
				t.Fatalf("%s: Order %v: %d is not usable in the top tier %v, or repeats", desc, got, i, want)
			}
			seen[i] = true
		}
		switch strategy {
		case balancer.StrategyFailover:
			if !slices.IsSorted(got) {
				t.Fatalf("%s: failover order %v not declared order", desc, got)
			}
		case balancer.StrategyLeastCost:
			if !slices.IsSortedFunc(got, func(a, b int) int {
				if c := fuzzCompare(ts[a].Cost, ts[b].Cost); c != 0 {
					return c
				}
				return a - b
			}) {
				t.Fatalf("%s: least_cost order %v not by cost", desc, got)
			}
		}
		p := g.Pick(req)
		switch {
		case len(want) == 0 && p != -1:
			t.Fatalf("%s: Pick %d; want -1", desc, p)
		case len(want) > 0 && !slices.Contains(want, p):
			t.Fatalf("%s: Pick %d not in %v", desc, p, want)
		case len(want) > 0 && p != got[0] && !advances(strategy, key):
			t.Fatalf("%s: Pick %d; Order starts with %d", desc, p, got[0])
		}
		for i := range n {
			if i%3 == 0 {
				g.Release(i)
			}
		}
	})
}

// advances reports strategies whose consecutive calls differ by design:
// round_robin, and consistent_hash spreading keyless requests.
func advances(strategy string, key []byte) bool {
	return strategy == balancer.StrategyRoundRobin || strategy == balancer.StrategyConsistentHash && len(key) == 0
}

func key0(key []byte, i int) byte {
	if len(key) == 0 {
		return byte(i)
	}
	return key[i%len(key)]
}

func fuzzCompare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fuzzReference applies the routing rules directly: the tag-eligible targets
// in declared order, and the usable ones of the highest usable tier.
func fuzzReference(ts []balancer.Target, header string, skip balancer.Set) (eligible, top []int) {
	var reqTags []string
	for _, tok := range strings.Split(header, ",") {
		if tok = strings.Trim(tok, " \t"); tok != "" {
			reqTags = append(reqTags, tok)
		}
	}
	anyTags := slices.ContainsFunc(ts, func(t balancer.Target) bool { return len(t.Tags) > 0 })
	var sharing, defaults []int
	for i, t := range ts {
		if slices.ContainsFunc(t.Tags, func(tag string) bool { return slices.Contains(reqTags, tag) }) {
			sharing = append(sharing, i)
		}
		if slices.Contains(t.Tags, "default") {
			defaults = append(defaults, i)
		}
	}
	switch {
	case !anyTags:
		for i := range ts {
			eligible = append(eligible, i)
		}
	case len(reqTags) > 0 && len(sharing) > 0:
		eligible = sharing
	case len(reqTags) > 0 || len(defaults) > 0:
		eligible = defaults
	default:
		for i := range ts {
			eligible = append(eligible, i)
		}
	}
	best := int64(math.MinInt64)
	for _, i := range eligible {
		if !skip.Has(i) {
			best = max(best, ts[i].Priority)
		}
	}
	for _, i := range eligible {
		if !skip.Has(i) && ts[i].Priority == best {
			top = append(top, i)
		}
	}
	return eligible, top
}

// FuzzBalancerRetryAfter checks ParseRetryAfter never panics, never returns
// a negative duration, and reads plain delay-seconds exactly.
func FuzzBalancerRetryAfter(f *testing.F) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, s := range []string{"120", " 0 ", "-1", "1.5", "", "Tue, 04 Mar 2025 05:06:37 GMT",
		"Tuesday, 04-Mar-25 05:06:37 GMT", "Tue Mar  4 05:06:37 2025", "99999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := balancer.ParseRetryAfter(v, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("ParseRetryAfter(%q): (%s, %v)", v, d, ok)
		}
		s := strings.Trim(v, " \t")
		if n, err := strconv.ParseUint(s, 10, 32); err == nil && s[0] != '+' {
			if !ok || d != time.Duration(n)*time.Second {
				t.Fatalf("ParseRetryAfter(%q): got (%s, %v); want %ds", v, d, ok, n)
			}
		}
	})
}
