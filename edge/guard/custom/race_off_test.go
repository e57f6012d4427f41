//go:build !race

package custom_test

const slowdown = 1
