package multipart

import (
	"errors"
	"strconv"
)

// Error kinds. Every error the Reader returns wraps exactly one of them, so
// the edge maps them to a status with errors.Is:
//
//	ErrMalformed -> 400 (the body is not valid multipart/form-data)
//	ErrTooLarge  -> 413 (max body size, part count, header or text limits)
//	ErrRead      -> the caller's body could not be read (client went away)
//	ErrWrite     -> the destination (the upstream request) refused bytes
var (
	ErrMalformed = errors.New("multipart: malformed body")
	ErrTooLarge  = errors.New("multipart: body exceeds a limit")
	ErrRead      = errors.New("multipart: cannot read request body")
	ErrWrite     = errors.New("multipart: cannot write upstream body")
)

// Error is the error type of this package. Msg is a static text (it never
// quotes body bytes, so a file's content or a field's value cannot leak into
// logs); Off is the input offset where the problem was found (-1 if none).
type Error struct {
	Kind error
	Msg  string
	Off  int64
	Err  error // the underlying I/O error, if any
}

func (e *Error) Error() string {
	s := "multipart: " + e.Msg
	if e.Off >= 0 {
		s += " at byte " + strconv.FormatInt(e.Off, 10)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap lets errors.Is see both the kind and the underlying I/O error.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

func malformed(msg string, off int64) error { return &Error{Kind: ErrMalformed, Msg: msg, Off: off} }
func tooLarge(msg string, off int64) error  { return &Error{Kind: ErrTooLarge, Msg: msg, Off: off} }

// ErrSpool is the kind of a failure to use the temporary file (disk full):
// the gateway's fault, not the caller's (500/503).
var ErrSpool = errors.New("multipart: cannot use the spool file")
