package sse

import "bytes"

// AppendData appends a complete unnamed event carrying data to dst and
// returns the extended buffer. dst may be nil.
//
// Each line of data becomes its own `data:` line; CR, LF and CRLF all count
// as line breaks, so a Reader gives back data with every break turned into
// '\n'. data is typically one JSON document and has no line breaks.
func AppendData(dst, data []byte) []byte {
	dst = appendDataLines(dst, data)
	return append(dst, '\n')
}

// AppendEvent appends a complete event named name carrying data to dst and
// returns the extended buffer. dst may be nil.
//
// An empty name writes no `event:` line (the event is a "message").
// name must not contain CR or LF; if it does, it is cut at the first one so
// that the output stays well-formed. data is split as in AppendData.
func AppendEvent(dst, name, data []byte) []byte {
	if len(name) > 0 {
		if i := indexEOL(name); i >= 0 {
			name = name[:i]
		}
		dst = append(dst, strEventPrefix...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	dst = appendDataLines(dst, data)
	return append(dst, '\n')
}

// AppendDone appends the OpenAI stream terminator `data: [DONE]` to dst.
func AppendDone(dst []byte) []byte {
	return append(dst, strDoneEvent...)
}

// IsDone reports whether data is the OpenAI stream terminator `[DONE]`.
func IsDone(data []byte) bool {
	return bytes.Equal(data, strDone)
}

// AppendComment appends a comment block `: text` followed by a blank line,
// usable as a keep-alive, to dst. Line breaks in text start new comment
// lines. An empty text gives ":\n\n". A Reader skips the block.
func AppendComment(dst, text []byte) []byte {
	if len(text) == 0 {
		return append(dst, strEmptyComment...)
	}
	for {
		i := indexEOL(text)
		dst = append(dst, strCommentPrefix...)
		if i < 0 {
			dst = append(dst, text...)
			return append(dst, strEventEnd...)
		}
		dst = append(dst, text[:i]...)
		dst = append(dst, '\n')
		text = text[eolEnd(text, i):]
	}
}

// appendDataLines appends data as `data:` lines, each ending in '\n'.
func appendDataLines(dst, data []byte) []byte {
	i := indexEOL(data)
	if i < 0 {
		// Fast path - a single line, as every JSON chunk is.
		dst = append(dst, strDataPrefix...)
		dst = append(dst, data...)
		return append(dst, '\n')
	}
	// Slow path - one `data:` line per line of data.
	for {
		dst = append(dst, strDataPrefix...)
		if i < 0 {
			dst = append(dst, data...)
			return append(dst, '\n')
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		data = data[eolEnd(data, i):]
		i = indexEOL(data)
	}
}

// indexEOL returns the index of the first '\r' or '\n' in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// eolEnd returns the index just past the line break starting at b[i].
func eolEnd(b []byte, i int) int {
	if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
		return i + 2
	}
	return i + 1
}
