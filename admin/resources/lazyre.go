package resources

import (
	"regexp"
	"sync"
)

// lazyRE returns a regexp compiled on first call. The loader's name checks
// are package-level, and compiled at init they cost every gw start (and
// every `gw validate`) their heap and time whether or not the file has a
// field they check (see docs/PERFORMANCE.md, "Idle RSS (idlerss)").
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
