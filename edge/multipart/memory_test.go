package multipart

import (
	"runtime"
	"testing"
)

// TestBoundedMemory200MB streams a 200 MB upload in both field orders and
// checks the heap does not grow with it: everything the Reader allocates
// over the whole request (TotalAlloc, which counts every allocation, freed
// or not) stays under 2 MiB. The spooled order goes through a temporary
// file on disk, not memory.
func TestBoundedMemory200MB(t *testing.T) {
	if testing.Short() {
		t.Skip("200 MB upload")
	}
	const size = 200 << 20
	for _, modelFirst := range []bool{true, false} {
		name := "file first (spooled to disk)"
		if modelFirst {
			name = "model first (streamed)"
		}
		t.Run(name, func(t *testing.T) {
			// Warm the pool so the measurement is a steady-state request.
			runtime.GC()
			streamUpload(t, modelFirst, 1<<20, Limits{})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			streamUpload(t, modelFirst, size, Limits{})
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: 200 MiB through, %d bytes allocated, %d mallocs, heap in use %d -> %d",
				name, alloc, after.Mallocs-before.Mallocs, before.HeapInuse, after.HeapInuse)
			if alloc > 2<<20 {
				t.Fatalf("allocated %d bytes for a 200 MiB upload; want < 2 MiB", alloc)
			}
		})
	}
}
