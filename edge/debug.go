package edge

import (
	"net/http"
	"net/http/pprof"
	"time"
)

// DebugServer serves /debug/pprof/* on the observability.debug listener.
// It uses net/http because pprof's handlers are net/http handlers; it is
// never on the request path.
func DebugServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
