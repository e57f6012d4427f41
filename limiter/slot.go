package limiter

import "strings"

// keySlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the key,
// or of its first non-empty {hash tag}, modulo 16384. The limiter's keys
// carry no hash tag (a limit-count reservation has one key, so no call
// spans slots); the slot only checks that a multi-key call stays in one,
// since rueidis panics on a cross-slot command.
func keySlot(key string) uint16 {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^key[i]]
	}
	return crc & 16383
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
