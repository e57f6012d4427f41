//go:build !race

package usage_test

import (
	"testing"
	"time"

	"gw/edge/usage"
)

func TestEmitAllocs(t *testing.T) {
	p := usage.New(usage.Options{})
	defer p.Close(time.Second)
	r := sampleRecords()[1]
	if n := testing.AllocsPerRun(1000, func() { p.Emit(&r) }); n != 0 {
		t.Fatalf("Emit allocates %v per record; want 0", n)
	}
	buf := usage.AppendJSON(nil, &r)
	if n := testing.AllocsPerRun(1000, func() { buf = usage.AppendJSON(buf[:0], &r) }); n != 0 {
		t.Fatalf("AppendJSON allocates %v per record into a reused buffer; want 0", n)
	}
}
