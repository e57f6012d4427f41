package limiter

// Header names, lowercase as OpenAI sends them (HTTP names are
// case-insensitive; HTTP/2 requires lowercase).
var (
	headerLimitRequests     = []byte("x-ratelimit-limit-requests")
	headerRemainingRequests = []byte("x-ratelimit-remaining-requests")
	headerResetRequests     = []byte("x-ratelimit-reset-requests")
	headerLimitTokens       = []byte("x-ratelimit-limit-tokens")
	headerRemainingTokens   = []byte("x-ratelimit-remaining-tokens")
	headerResetTokens       = []byte("x-ratelimit-reset-tokens")
	headerRetryAfter        = []byte("retry-after")
)
