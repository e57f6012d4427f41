// Package testport picks TCP ports for test servers that are killed and
// restarted on the same address (Redis, etcd, the S3 store).
//
// A port from "127.0.0.1:0" lies in the kernel's ephemeral range. While
// its server is down, any outgoing connection on the machine (a parallel
// test package's client, or the gateway's own reconnect probe dialling
// that very port) may be given it as its local port and hold it, and the
// restart then fails with "address already in use". Ports below the
// ephemeral range are never handed out that way.
package testport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BusOffset is the distance of a Redis cluster node's bus port from its
// client port; Pick keeps that port free and below the range too.
const BusOffset = 10000

// Pick returns a port P on 127.0.0.1 with P and P+BusOffset free and both
// below the ephemeral range. When the range starts too low to leave room,
// it falls back to a kernel-chosen port.
func Pick(tb testing.TB) int {
	tb.Helper()
	const lo = 10000
	hi := ephemeralLow() - BusOffset
	for attempt := 0; hi-lo >= 1000 && attempt < 200; attempt++ {
		p := lo + rand.IntN(hi-lo)
		if free(p) && free(p+BusOffset) {
			return p
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("cannot pick a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func free(port int) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// ephemeralLow is the first port the kernel hands to outgoing connections
// (Linux's default 32768 elsewhere).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}
