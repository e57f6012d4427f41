// Package builtin links every built plugin into the data plane; importing
// it registers them (plugin.Names lists what it holds).
package builtin

import (
	_ "gw/edge/gateway/plugins/aiproxymulti"
	_ "gw/edge/gateway/plugins/basicauth"
	_ "gw/edge/gateway/plugins/errorpage"
	_ "gw/edge/gateway/plugins/httplogger"
	_ "gw/edge/gateway/plugins/jwtauth"
	_ "gw/edge/gateway/plugins/keyauth"
	_ "gw/edge/gateway/plugins/limitcount"
	_ "gw/edge/gateway/plugins/prometheus"
	_ "gw/edge/gateway/plugins/proxyrewrite"
)
