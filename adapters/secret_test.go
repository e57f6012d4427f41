package adapters_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gw/adapters"
)

func TestSecret(t *testing.T) {
	const plain = "sk-plaintext-credential"
	s := adapters.NewSecret(plain)
	if s.Reveal() != plain || !s.IsSet() {
		t.Fatalf("Reveal %q, IsSet %v", s.Reveal(), s.IsSet())
	}
	var zero adapters.Secret
	if zero.Reveal() != "" || zero.IsSet() || adapters.NewSecret("").IsSet() {
		t.Fatal("an empty secret reports set")
	}
	type exported struct{ Key adapters.Secret }
	type unexported struct {
		name string
		key  adapters.Secret
	}
	values := []any{s, &s, exported{s}, &exported{s}, unexported{"n", s}, &unexported{"n", s}, []adapters.Secret{s},
		map[string]adapters.Secret{"k": s}}
	for _, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
			if out := fmt.Sprintf(verb, v); strings.Contains(out, plain) || strings.Contains(out, fmt.Sprintf("%x", plain)) {
				t.Fatalf("%s of %T prints the credential: %s", verb, v, out)
			}
		}
		if b, err := json.Marshal(v); err != nil || strings.Contains(string(b), plain) {
			t.Fatalf("JSON of %T: %s, %v", v, b, err)
		}
	}
	if got := fmt.Sprint(s); got != "[REDACTED]" {
		t.Fatalf("got %q; want [REDACTED]", got)
	}
}
