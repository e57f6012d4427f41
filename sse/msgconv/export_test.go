package msgconv

// SetClock replaces the clock of the `created` fields until the returned
// function restores it.
func SetClock(unix int64) (restore func()) {
	prev := nowUnix
	nowUnix = func() int64 { return unix }
	return func() { nowUnix = prev }
}

// ScanKeys exposes scanKeys to the benchmarks.
var ScanKeys = scanKeys
