package snapshot

import (
	"testing"

	"gw/admin/resources"
)

func TestEffortMapping(t *testing.T) {
	s := func(v string) *string { return &v }
	m := compileEffort([]resources.EffortRule{
		{From: "low", To: s("minimal")},
		{From: "high", To: nil},
		{From: "*", To: s("medium")},
		{From: "", To: s("low")},
	})
	f := func(body, want string) {
		t.Helper()
		if got := string(m.Apply(nil, []byte(body))); got != want {
			t.Fatalf("%s -> %s; want %s", body, got, want)
		}
	}
	f(`{"reasoning_effort":"low","m":1}`, `{"reasoning_effort":"minimal","m":1}`) // exact
	f(`{"m":1,"reasoning_effort":"high"}`, `{"m":1}`)                             // null removes
	f(`{"reasoning_effort":"xhigh"}`, `{"reasoning_effort":"medium"}`)            // "*" for any other value
	f(`{"m":1}`, `{"m":1,"reasoning_effort":"low"}`)                              // "" for requests without effort
	f(`{"reasoning_effort":5}`, `{"reasoning_effort":5}`)                         // not a string: untouched
	if compileEffort(nil) != nil {
		t.Fatal("empty mapping must compile to nil (off)")
	}
	// Without a "" rule, a request without effort is untouched; "*" does not apply to it.
	m = compileEffort([]resources.EffortRule{{From: "*", To: s("medium")}})
	f(`{"m":1}`, `{"m":1}`)
}
