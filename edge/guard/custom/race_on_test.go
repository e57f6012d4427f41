//go:build race

package custom_test

// slowdown scales timing bounds: the race detector makes the transpiled
// engine 10-50 times slower.
const slowdown = 20
