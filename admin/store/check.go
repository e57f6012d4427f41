package store

import (
	"fmt"
	"strings"
)

// checkPut refuses writes no implementation could store the same way.
func checkPut(key string, opts PutOptions) error {
	if !strings.HasPrefix(key, "/") {
		return fmt.Errorf("cannot put %q: keys are paths starting with /", key)
	}
	if opts.PrevRev < MustNotExist {
		return fmt.Errorf("cannot put %q: PrevRev %d is neither 0, MustNotExist nor a revision", key, opts.PrevRev)
	}
	if opts.TTL < 0 {
		return fmt.Errorf("cannot put %q: negative TTL %s", key, opts.TTL)
	}
	return nil
}

// checkPrev applies PutOptions.PrevRev to the key's current state.
func checkPrev(exists bool, modRev, prevRev int64) error {
	switch {
	case prevRev == MustNotExist && exists:
		return ErrConflict
	case prevRev > 0 && (!exists || modRev != prevRev):
		return ErrConflict
	}
	return nil
}
