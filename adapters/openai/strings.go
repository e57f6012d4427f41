package openai

// Header names in canonical form (fasthttp's SetCanonical skips normalising)
// and fixed values.
var (
	strPost            = []byte("POST")
	strAuthorization   = []byte("Authorization")
	strAPIKey          = []byte("Api-Key")
	strAcceptEncoding  = []byte("Accept-Encoding")
	strIdentity        = []byte("identity")
	strApplicationJSON = []byte("application/json")
	strBearer          = "Bearer "
	strTrue            = []byte("true")
	strIncludeUsage    = []byte(`{"include_usage":true}`)
)

// Body keys read in the first scan; the indexes below address ScanTop's
// results. Rename sources and default body field keys follow them.
const (
	kMessages = iota
	kMaxTokens
	kMaxCompletionTokens
	kTemperature
	kStreamOptions
	numFixedKeys
)

var fixedKeys = [numFixedKeys]string{
	kMessages:            "messages",
	kMaxTokens:           "max_tokens",
	kMaxCompletionTokens: "max_completion_tokens",
	kTemperature:         "temperature",
	kStreamOptions:       "stream_options",
}

var (
	messageKeys = []string{"role", "content"}

	strThinkingBlocks = []byte(`"thinking_blocks"`)
	blockKeys         = []string{"type", "text"}
	chunkKeys         = []string{"choices", "usage"}
)
