package multipart

import (
	"errors"
	"testing"
)

func TestAppendBoundary(t *testing.T) {
	cases := []struct {
		ct, want string
		ok       bool
	}{
		{"multipart/form-data; boundary=abc", "abc", true},
		{"Multipart/Form-Data;boundary=abc", "abc", true},
		{"multipart/form-data; charset=utf-8; BOUNDARY=x-y_z", "x-y_z", true},
		{`multipart/form-data; boundary="a b:c?"`, "a b:c?", true},
		{`multipart/form-data; boundary="a\"b"`, "", false}, // '"' is not a bchar
		{`multipart/form-data; boundary="----WebKitFormBoundary7MA4YWxkTrZu0gW"`, "----WebKitFormBoundary7MA4YWxkTrZu0gW", true},
		{"multipart/form-data; boundary=abc;", "abc", true},
		{"  multipart/form-data ; boundary = abc ", "abc", true},
		{"multipart/form-data", "", false},
		{"multipart/mixed; boundary=abc", "", false},
		{"application/json", "", false},
		{"multipart/form-data; boundary=", "", false},
		{`multipart/form-data; boundary=""`, "", false},
		{`multipart/form-data; boundary="abc `, "", false},
		{`multipart/form-data; boundary="abc "`, "", false}, // ends in a space
		{"multipart/form-data; boundary=a; boundary=b", "", false},
		{"multipart/form-data; boundary=" + string(make([]byte, 0)) + "0123456789012345678901234567890123456789012345678901234567890123456789", "0123456789012345678901234567890123456789012345678901234567890123456789", true},
		{"multipart/form-data; boundary=01234567890123456789012345678901234567890123456789012345678901234567890", "", false},
		{"multipart/form-data; boundary=a\x00b", "", false},
		{"multipart/form-data; junk", "", false},
	}
	for _, tc := range cases {
		got, err := AppendBoundary(nil, []byte(tc.ct))
		if tc.ok != (err == nil) || string(got) != tc.want {
			t.Errorf("AppendBoundary(%q) = %q, %v; want %q, ok=%v", tc.ct, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("AppendBoundary(%q): error %v is not ErrMalformed", tc.ct, err)
		}
	}
}

func TestParseHeaders(t *testing.T) {
	cases := []struct {
		name, block        string
		wantName, wantFile string
		wantCType          string
		file               bool
		wantErr            string
	}{
		{"plain text field", "Content-Disposition: form-data; name=\"model\"\r\n", "model", "", "", false, ""},
		{"token name", "content-disposition: FORM-DATA; NAME=model\r\n", "model", "", "", false, ""},
		{"file with type", "Content-Disposition: form-data; name=\"file\"; filename=\"a b.mp3\"\r\nContent-Type: audio/mpeg\r\n", "file", "a b.mp3", "audio/mpeg", true, ""},
		{"escaped quote", `Content-Disposition: form-data; name="image[]"; filename="x\"y\\z.png"` + "\r\n", "image[]", `x"y\z.png`, "", true, ""},
		{"windows path backslash kept", `Content-Disposition: form-data; name="f"; filename="C:\dir\a.wav"` + "\r\n", "f", `C:\dir\a.wav`, "", true, ""},
		{"filename* utf-8 wins", "Content-Disposition: form-data; name=\"f\"; filename=\"a.wav\"; filename*=UTF-8''%E2%82%AC%20rates.wav\r\n", "f", "€ rates.wav", "", true, ""},
		{"filename* latin1", "Content-Disposition: form-data; name=\"f\"; filename*=iso-8859-1'en'%A3.wav\r\n", "f", "£.wav", "", true, ""},
		{"filename* unknown charset falls back", "Content-Disposition: form-data; name=\"f\"; filename=\"p.wav\"; filename*=koi8-r''%C1.wav\r\n", "f", "p.wav", "", true, ""},
		{"empty filename is a file", "Content-Disposition: form-data; name=\"f\"; filename=\"\"\r\n", "f", "", "", true, ""},
		{"utf-8 in quoted name", "Content-Disposition: form-data; name=\"café\"\r\n", "café", "", "", false, ""},
		{"other headers ignored", "X-Thing: 1\r\nContent-Disposition: form-data; name=a\r\nContent-Transfer-Encoding: binary\r\n", "a", "", "", false, ""},
		{"no disposition", "Content-Type: text/plain\r\n", "", "", "", false, "part has no Content-Disposition header"},
		{"not form-data", "Content-Disposition: attachment; name=a\r\n", "", "", "", false, "part disposition is not form-data"},
		{"no name", "Content-Disposition: form-data; filename=a\r\n", "", "", "", false, "part has no name"},
		{"empty name", "Content-Disposition: form-data; name=\"\"\r\n", "", "", "", false, "part has no name"},
		{"two names", "Content-Disposition: form-data; name=a; name=b\r\n", "", "", "", false, "part has two name parameters"},
		{"two dispositions", "Content-Disposition: form-data; name=a\r\nContent-Disposition: form-data; name=b\r\n", "", "", "", false, "part has two Content-Disposition headers"},
		{"two content types", "Content-Disposition: form-data; name=a\r\nContent-Type: a/b\r\ncontent-type: c/d\r\n", "", "", "", false, "part has two Content-Type headers"},
		{"folding", "Content-Disposition: form-data; name=a\r\nX-A: b\r\n c\r\n", "", "", "", false, "part header uses obsolete line folding"},
		{"bare LF", "Content-Disposition: form-data; name=a\n", "", "", "", false, "part header line does not end in CRLF"},
		{"bare CR inside", "Content-Disposition: form-data; name=a\rX: y\r\n", "", "", "", false, "part header value has a control character"},
		{"no colon", "Content-Disposition form-data; name=a\r\n", "", "", "", false, "part header line has no name"},
		{"space in header name", "Content Disposition: form-data; name=a\r\n", "", "", "", false, "part header name has an invalid character"},
		{"unterminated quote", "Content-Disposition: form-data; name=\"a\r\n", "", "", "", false, "part disposition parameters are malformed"},
		{"garbage after value", "Content-Disposition: form-data; name=\"a\" x\r\n", "", "", "", false, "part disposition parameters are malformed"},
		{"bad percent", "Content-Disposition: form-data; name=a; filename*=UTF-8''%G1\r\n", "", "", "", false, "filename* has a malformed percent escape"},
		{"name star", "Content-Disposition: form-data; name=x; name*=UTF-8''model\r\n", "", "", "", false, "part disposition has a parameter this gateway does not accept (name* or a continuation)"},
		{"continuation", "Content-Disposition: form-data; name=x; filename*0=\"a\"; filename*1=\"b\"\r\n", "", "", "", false, "part disposition has a parameter this gateway does not accept (name* or a continuation)"},
		{"quoted ext", "Content-Disposition: form-data; name=a; filename*=\"UTF-8''a\"\r\n", "", "", "", false, "filename* must not be quoted"},
		{"boundary line in headers", "Content-Disposition: form-data; name=a\r\n--b:c\r\n", "", "", "", false, "boundary inside part headers"},
		{"NUL in value", "Content-Disposition: form-data; name=a\r\nX: a\x00b\r\n", "", "", "", false, "part header value has a control character"},
		// What net/textproto rejects too (FuzzMultipartReader found DEL).
		{"DEL in value", "Content-Disposition: form-data; name=a\r\nContent-Type: application/o\x7ftet-stream\r\n", "", "", "", false, "part header value has a control character"},
		{"SOH in value", "Content-Disposition: form-data; name=a\r\nX: a\x01b\r\n", "", "", "", false, "part header value has a control character"},
		{"tab in value", "Content-Disposition: form-data; name=a\r\nContent-Type: a/b;\tx=y\r\n", "a", "", "a/b;\tx=y", false, ""},
		{"obs-text in value", "Content-Disposition: form-data; name=a\r\nX: caf\xc3\xa9\r\n", "a", "", "", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d disposition
			arena, msg := parseHeaders([]byte(tc.block), nil, []byte("--b:c"), &d)
			if msg != tc.wantErr {
				t.Fatalf("error %q; want %q", msg, tc.wantErr)
			}
			if msg != "" {
				return
			}
			if got := string(d.name.get(arena)); got != tc.wantName {
				t.Errorf("name %q; want %q", got, tc.wantName)
			}
			if got := string(d.filename.get(arena)); got != tc.wantFile {
				t.Errorf("filename %q; want %q", got, tc.wantFile)
			}
			if got := string(d.ctype.get(arena)); got != tc.wantCType {
				t.Errorf("content type %q; want %q", got, tc.wantCType)
			}
			if d.file != tc.file {
				t.Errorf("file %v; want %v", d.file, tc.file)
			}
		})
	}
}
