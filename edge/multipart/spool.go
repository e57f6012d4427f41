package multipart

import (
	"io"
	"os"
)

// spool holds the raw bytes the first pass read before the caller could
// decide where the body goes: in memory up to memMax, then in an unlinked
// temporary file (removed as soon as it is created, so nothing is left
// behind even if the process dies; the space is freed when it is closed).
type spool struct {
	mem    []byte
	memMax int
	file   *os.File
	size   int64 // total bytes: len(mem) + bytes in file
	dir    string
	// name is set only when the file could not be unlinked while open
	// (Windows); reset removes it after closing.
	name string
}

func (s *spool) write(p []byte) error {
	if s.file == nil {
		if room := s.memMax - len(s.mem); len(p) <= room {
			s.mem = append(s.mem, p...)
			s.size += int64(len(p))
			return nil
		} else if room > 0 {
			s.mem = append(s.mem, p[:room]...)
			s.size += int64(room)
			p = p[room:]
		}
		f, err := os.CreateTemp(s.dir, "gw-multipart-*")
		if err != nil {
			return err
		}
		// Unlink at once: the open descriptor keeps the data until Close.
		if os.Remove(f.Name()) != nil {
			s.name = f.Name()
		}
		s.file = f
	}
	n, err := s.file.Write(p)
	s.size += int64(n)
	return err
}

// readAt returns up to len(scratch) spooled bytes starting at off: a view
// of mem, or bytes read from the file into scratch.
func (s *spool) readAt(off int64, scratch []byte) ([]byte, error) {
	if off < int64(len(s.mem)) {
		return s.mem[off:], nil
	}
	foff := off - int64(len(s.mem))
	want := s.size - off
	if want > int64(len(scratch)) {
		want = int64(len(scratch))
	}
	n, err := s.file.ReadAt(scratch[:want], foff)
	if n == int(want) {
		return scratch[:n], nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// reset closes the file (freeing its disk space) and keeps mem's capacity.
func (s *spool) reset() {
	if s.file != nil {
		_ = s.file.Close()
		s.file = nil
	}
	if s.name != "" {
		_ = os.Remove(s.name)
		s.name = ""
	}
	s.mem = s.mem[:0]
	s.size = 0
}
