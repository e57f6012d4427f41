package multipart

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestFraming covers RFC 2046 framing by hand-written bodies (boundary
// "XB"), each fed whole and split at every odd place.
func TestFraming(t *testing.T) {
	const ct = "multipart/form-data; boundary=XB"
	cd := func(n string) string { return "Content-Disposition: form-data; name=\"" + n + "\"\r\n" }
	cases := []struct {
		name    string
		body    string
		lim     Limits
		kind    error  // nil: valid
		model   string // for valid bodies
		wantOut string // "" means output == input
	}{
		{"minimal", "--XB\r\n" + cd("model") + "\r\nm\r\n--XB--", Limits{}, nil, "m", ""},
		{"minimal with CRLF after close", "--XB\r\n" + cd("model") + "\r\nm\r\n--XB--\r\n", Limits{}, nil, "m", ""},
		{"preamble and epilogue kept", "this is a preamble\r\nx--XB\r\n--XB\r\n" + cd("model") + "\r\nm\r\n--XB--\r\nepilogue --XB\r\n", Limits{}, nil, "m", ""},
		{"transport padding", "--XB \t\r\n" + cd("model") + "\r\nm\r\n--XB  \r\n" + cd("x") + "\r\n1\r\n--XB--  ", Limits{}, nil, "m", ""},
		{"value with CRLF and dashes", "--XB\r\n" + cd("model") + "\r\n\r\n-\r\n--X\r\n--XA\r\n\r\n--XB--", Limits{}, nil, "\r\n-\r\n--X\r\n--XA\r\n", ""},
		{"empty value", "--XB\r\n" + cd("model") + "\r\n\r\n--XB--", Limits{}, nil, "", ""},

		{"truncated in body", "--XB\r\n" + cd("model") + "\r\nm", Limits{}, ErrMalformed, "", ""},
		{"truncated after delimiter", "--XB\r\n" + cd("model") + "\r\nm\r\n--XB", Limits{}, ErrMalformed, "", ""},
		{"truncated in headers", "--XB\r\n" + "Content-Disposition: form-da", Limits{}, ErrMalformed, "", ""},
		{"empty body", "", Limits{}, ErrMalformed, "", ""},
		{"no boundary", "hello world\r\n", Limits{}, ErrMalformed, "", ""},
		{"no parts", "--XB--\r\n", Limits{}, ErrMalformed, "", ""},
		{"boundary not at line start in content", "--XB\r\n" + cd("model") + "\r\nm--XB\r\n--XB--", Limits{}, ErrMalformed, "", ""},
		{"LF-only delimiter in content", "--XB\r\n" + cd("model") + "\r\nm\n--XB\r\n" + cd("prompt") + "\r\nevil\r\n--XB--", Limits{}, ErrMalformed, "", ""},
		{"boundary with suffix in content", "--XB\r\n" + cd("model") + "\r\nm\r\n--XBX\r\n--XB--", Limits{}, ErrMalformed, "", ""},
		{"boundary at body start", "--XB\r\n" + cd("model") + "\r\n--XB--", Limits{}, ErrMalformed, "", ""},
		{"LF after boundary", "--XB\n" + cd("model") + "\r\nm\r\n--XB--", Limits{}, ErrMalformed, "", ""},
		{"no headers", "--XB\r\n\r\nm\r\n--XB--", Limits{}, ErrMalformed, "", ""},
		{"too much padding", "--XB" + strings.Repeat(" ", 65) + "\r\n" + cd("model") + "\r\nm\r\n--XB--", Limits{}, ErrMalformed, "", ""},
		{"boundary-like line in preamble", "pre\r\n--XB not a boundary\r\n--XB\r\n" + cd("model") + "\r\nm\r\n--XB--", Limits{}, ErrMalformed, "", ""},
		{"LF-only headers end", "--XB\r\n" + "Content-Disposition: form-data; name=model\n\nm\r\n--XB--", Limits{}, ErrMalformed, "", ""},

		{"body limit", "--XB\r\n" + cd("model") + "\r\n" + strings.Repeat("m", 100) + "\r\n--XB--", Limits{MaxBodyBytes: 90}, ErrTooLarge, "", ""},
		{"body limit exact", "--XB\r\n" + cd("model") + "\r\nm\r\n--XB--", Limits{MaxBodyBytes: int64(len("--XB\r\n" + cd("model") + "\r\nm\r\n--XB--"))}, nil, "m", ""},
		{"body limit one short", "--XB\r\n" + cd("model") + "\r\nm\r\n--XB--", Limits{MaxBodyBytes: int64(len("--XB\r\n"+cd("model")+"\r\nm\r\n--XB--")) - 1}, ErrTooLarge, "", ""},
		{"part limit", "--XB\r\n" + cd("a") + "\r\n1\r\n--XB\r\n" + cd("b") + "\r\n2\r\n--XB--", Limits{MaxParts: 1}, ErrTooLarge, "", ""},
		{"header limit", "--XB\r\n" + cd("model") + "X-Pad: " + strings.Repeat("p", 100) + "\r\n\r\nm\r\n--XB--", Limits{MaxHeaderBytes: 64}, ErrTooLarge, "", ""},
		{"text limit", "--XB\r\n" + cd("model") + "\r\n" + strings.Repeat("m", 100) + "\r\n--XB--", Limits{MaxTextBytes: 99}, ErrTooLarge, "", ""},
		{"text limit exact", "--XB\r\n" + cd("model") + "\r\n" + strings.Repeat("m", 100) + "\r\n--XB--", Limits{MaxTextBytes: 100}, nil, strings.Repeat("m", 100), ""},
	}
	for _, tc := range cases {
		in := []byte(tc.body)
		for rname, mk := range readers(in) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				var model []byte
				out, err := run(t, mk(), ct, tc.lim, []string{"model"}, func(r *Reader) error {
					model, _ = r.Value("model")
					model = bytes.Clone(model)
					return nil
				})
				if tc.kind != nil {
					if !errors.Is(err, tc.kind) {
						t.Fatalf("err = %v; want %v", err, tc.kind)
					}
					if bytes.HasSuffix(bytes.TrimRight(out, "\r\n "), []byte("--XB--")) {
						t.Fatal("a complete body was written before the error")
					}
					return
				}
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if string(model) != tc.model {
					t.Fatalf("model = %q; want %q", model, tc.model)
				}
				want := tc.wantOut
				if want == "" {
					want = tc.body
				}
				if string(out) != want {
					t.Fatalf("output %q; want %q", out, want)
				}
			})
		}
	}
}

func TestAcquireRejectsContentType(t *testing.T) {
	for _, ct := range []string{"", "application/json", "multipart/form-data", "multipart/form-data; boundary=\"\""} {
		if r, err := Acquire(strings.NewReader(""), []byte(ct), Limits{}); err == nil || !errors.Is(err, ErrMalformed) {
			if r != nil {
				Release(r)
			}
			t.Errorf("Acquire(%q): err = %v; want ErrMalformed", ct, err)
		}
	}
}
