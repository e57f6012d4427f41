package eventstream

import (
	"encoding/binary"
	"hash/crc32"
)

func crc(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// appendRaw encodes a message with a raw header block.
func appendRaw(dst, headers, payload []byte) []byte {
	n := len(dst)
	total := preludeLen + len(headers) + len(payload) + 4
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(headers)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[n:n+8]))
	dst = append(dst, headers...)
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[n:]))
}
