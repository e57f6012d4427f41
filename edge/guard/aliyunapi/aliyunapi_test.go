package aliyunapi

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote"
	"gw/perf/mock"
)

func TestLevels(t *testing.T) {
	for i, l := range []string{"none", "low", "medium", "high"} {
		if Level([]byte(`"`+l+`"`)) != i || LevelOf(l) != i {
			t.Fatalf("%s: got %d/%d; want %d", l, Level([]byte(`"`+l+`"`)), LevelOf(l), i)
		}
	}
	if Level([]byte(`"max"`)) != -1 || LevelOf("") != -1 {
		t.Fatal("unknown level accepted")
	}
	for s, want := range map[string]bool{"political_content": true, "promptAttack": true, "": false, "has space": false, strings.Repeat("a", 65): false} {
		if LabelOK([]byte(s)) != want {
			t.Fatalf("LabelOK(%q): got %v", s, !want)
		}
	}
	req := &guard.Request{Texts: []guard.Text{{Data: []byte("a")}, {Data: nil}, {Data: []byte("b")}}}
	if got := string(Join(nil, req)); got != "a\nb" {
		t.Fatalf("Join: %q", got)
	}
}

// TestCall: the signed call against the mock; a business Code other than
// 200 is a malformed-answer error without the service's message.
func TestCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := mock.New(mock.Config{})
	go srv.Serve(ln)
	defer srv.Shutdown()
	creds := &resources.AliyunCredentials{Region: "cn-shanghai", AccessKeyID: mock.AliyunAccessKeyID,
		AccessKeySecret: resources.NewSecret(mock.AliyunAccessKeySecret), Endpoint: "http://" + ln.Addr().String()}
	c, err := New("g", creds, 1000, "TextModerationPlus", "llm_query_moderation", "not_a_service")
	if err != nil {
		t.Fatal(err)
	}
	buf := remote.GetBuffer()
	defer remote.PutBuffer(buf)
	data, err := c.Call(context.Background(), "llm_query_moderation", []byte("hello \"world\" & more"), buf)
	if err != nil || !strings.Contains(string(data), `"RiskLevel":"none"`) {
		t.Fatalf("got %s, %v", data, err)
	}
	_, err = c.Call(context.Background(), "not_a_service", []byte("x"), buf)
	var re *remote.Error
	if !errors.As(err, &re) || re.Class != remote.ClassMalformed || !strings.Contains(err.Error(), "Code 400") || strings.Contains(err.Error(), "not supported") {
		t.Fatalf("got %v", err)
	}
	if _, err := c.Call(context.Background(), "undeclared", []byte("x"), buf); err == nil {
		t.Fatal("an undeclared service was called")
	}
	if DefaultEndpoint("ap-southeast-1") != "https://green-cip.ap-southeast-1.aliyuncs.com" {
		t.Fatal(DefaultEndpoint("ap-southeast-1"))
	}
}
