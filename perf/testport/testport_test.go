package testport

import "testing"

func TestPickBelowEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for i := 0; i < 20; i++ {
		p := Pick(t)
		if low-BusOffset-10000 >= 1000 && (p < 10000 || p+BusOffset >= low) {
			t.Fatalf("port %d (bus %d) not below the ephemeral range starting at %d", p, p+BusOffset, low)
		}
		if !free(p) || !free(p+BusOffset) {
			t.Fatalf("port %d or its bus port is taken", p)
		}
	}
}
