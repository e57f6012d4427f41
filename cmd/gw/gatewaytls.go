package main

import (
	"crypto/tls"
	"log/slog"
	"net"

	"gw/edge/gateway/tlsmap"
)

// serveTLS serves the gateway's routes on ln over TLS, with the admin
// API's certificates chosen by SNI during each handshake (tlsmap follows
// the snapshot holder, so a certificate write applies to the next
// handshake without a restart).
func (r *gatewayRuntime) serveTLS(ln net.Listener, adm *adminRuntime, log *slog.Logger) error {
	s := tlsmap.NewStore(adm.Holder, log.With("component", "gateway-tls"))
	return r.srv.Serve(tls.NewListener(ln, s.Config()))
}
