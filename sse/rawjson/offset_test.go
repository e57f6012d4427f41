package rawjson

import "testing"

func TestOffset(t *testing.T) {
	doc := []byte(`{"a":"xyz","b":[1,2]}`)
	other := []byte(`{"a":"xyz","b":[1,2]}`)
	for _, c := range []struct {
		sub  []byte
		want int
	}{
		{doc[5:10], 5},
		{doc[:1], 0},
		{doc[len(doc)-1:], len(doc) - 1},
		{doc, 0},
		{doc[3:3], -1},
		{other[5:10], -1},
		{nil, -1},
	} {
		if got := Offset(doc, c.sub); got != c.want {
			t.Errorf("Offset(%q) = %d, want %d", c.sub, got, c.want)
		}
	}
	vals := make([][]byte, 1)
	if err := ScanTop(doc, []string{"a"}, vals); err != nil || Offset(doc, vals[0]) != 5 {
		t.Fatalf("a value ScanTop returned: %v, offset %d", err, Offset(doc, vals[0]))
	}
}
