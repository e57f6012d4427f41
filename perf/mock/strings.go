package mock

// Header names and values shared by every wire format.
var (
	strCacheControl   = []byte("Cache-Control")
	strNoCache        = []byte("no-cache")
	strRetryAfter     = []byte("Retry-After")
	strXRequestID     = []byte("X-Request-Id")
	strXAccelBuffer   = []byte("X-Accel-Buffering")
	strNo             = []byte("no")
	strJSON           = []byte("application/json")
	strTextPlain      = []byte("text/plain; charset=utf-8")
	strEventStream    = []byte("text/event-stream; charset=utf-8")
	strRequestIDStart = []byte("req_mock_")
	strMockPrefix     = []byte("/_mock/")
)
