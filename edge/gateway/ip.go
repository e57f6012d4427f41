package gateway

import (
	"net"
	"net/netip"
)

func appendIP(dst []byte, ip net.IP) []byte {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return dst
	}
	return a.Unmap().AppendTo(dst)
}
