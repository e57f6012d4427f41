package edge

import "testing"

func TestLatestUserText(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		if got := string(LatestUserText(nil, []byte(body))); got != want {
			t.Errorf("LatestUserText(%s) = %q; want %q", body, got, want)
		}
	}
	f(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c \"q\" \u00e9"}]}`, `c "q" é`)
	f(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`, "a")
	f(`{"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"y"}]}]}`, "x\ny")
	f(`{"messages":[{"role":"system","content":"s"}]}`, "")
	f(`{"messages":[]}`, "")
	f(`{"messages":{}}`, "")
	f(`{}`, "")
	f(`{"messages":[{"role":"user"}]}`, "")
	f(`{"messages":[{"role":"user","content":42}]}`, "")
	f(`{"messages":[1,"x",{"role":"user","content":"ok"}]}`, "ok")
}
