package balancer

import "github.com/cespare/xxhash/v2"

// sum64 is the hash of every key and target ID (XXH64).
func sum64(b []byte) uint64 { return xxhash.Sum64(b) }

// mix64 is the SplitMix64 finalizer: a fast bijective mixer that turns
// correlated inputs (slot numbers, counters) into independent-looking bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
