package gate

import "testing"

func TestGranted(t *testing.T) {
	f := func(globs []string, name string, want bool) {
		t.Helper()
		if got := Granted(globs, name); got != want {
			t.Fatalf("Granted(%q, %q) = %v; want %v", globs, name, got, want)
		}
	}
	f(nil, "a", false) // no grant, no access
	f([]string{}, "a", false)
	f([]string{"a"}, "a", true)
	f([]string{"a"}, "ab", false)
	f([]string{"*"}, "anything", true)
	f([]string{"oa-*"}, "oa-files", true)
	f([]string{"oa-*"}, "oa-", true)
	f([]string{"oa-*"}, "xoa-files", false)
	f([]string{"*-files"}, "oa-files", true)
	f([]string{"a*a"}, "a", false) // prefix and suffix may not overlap
	f([]string{"a*a"}, "aa", true)
	f([]string{"x", "support-*"}, "support-bot", true)
}

func TestHopByHop(t *testing.T) {
	for h, want := range map[string]bool{
		"Connection": true, "keep-alive": true, "TE": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
		"Proxy-Authorization": true, "Proxy-Authenticate": true, "Proxy-Connection": true, "Host": true, "Content-Length": true,
		"Content-Type": false, "Authorization": false, "X-Custom": false, "Cookie": false,
	} {
		if got := HopByHop([]byte(h)); got != want {
			t.Fatalf("HopByHop(%q) = %v; want %v", h, got, want)
		}
	}
}
