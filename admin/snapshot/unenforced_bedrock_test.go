package snapshot

import (
	"strings"
	"testing"
)

// TestUnenforcedBedrock: the spec ignores tls and resolve_addresses on
// Bedrock keys and Converse has no string content for
// content_list_to_string; each is listed, and the body rules the adapter
// applies (param_constraints) and forward_client_headers are not.
func TestUnenforcedBedrock(t *testing.T) {
	s, err := Compile(loadFile(t, "testdata/bedrock_key.yaml", map[string]string{"K": `{"access_key_id":"a","secret_access_key":"b","region":"us-east-1"}`}), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range s.Unenforced {
		got = append(got, u.Entry+"|"+u.Field)
	}
	want := []string{"display_name=br|tls", "display_name=br|resolve_addresses", "display_name=br|response.content_list_to_string"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
