package sse

// Precomputed wire tokens. They are read-only; never append to them in place.
var (
	strDataPrefix    = []byte("data: ")
	strEventPrefix   = []byte("event: ")
	strCommentPrefix = []byte(": ")
	strEmptyComment  = []byte(":\n\n")
	strEventEnd      = []byte("\n\n")
	strDone          = []byte("[DONE]")
	strDoneEvent     = []byte("data: [DONE]\n\n")
)
