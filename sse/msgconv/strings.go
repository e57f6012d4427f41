package msgconv

// Precomputed wire tokens. They are read-only; never append to them in place.
var (
	strDataPrefix   = []byte("data: ")
	strDoneEvent    = []byte("data: [DONE]\n\n")
	strContentKey   = []byte(`"content":`)
	strReasoningKey = []byte(`"reasoning_content":`)
	// strBlockSeparator is BlockSeparator as a JSON string literal.
	strBlockSeparator    = []byte(`"\n\n"`)
	strSignedBlockOpen   = []byte(`{"type":"thinking","thinking":"","signature":`)
	strRedactedBlockOpen = []byte(`{"type":"redacted_thinking","data":`)
	strEmptyObjectLit    = []byte(`"{}"`)
	strEmptyObject       = []byte(`{}`)
	strEmptyString       = []byte(`""`)
	strPromptTooLong     = []byte("prompt is too long")
	strChatcmplPrefix    = []byte("chatcmpl-")
	strMsgPrefix         = []byte("msg_")
	strCacheControl      = []byte(`"cache_control"`)
	strDataURL           = []byte("data:")
	strBase64Marker      = []byte(";base64,")
	strUnicodeEscape     = []byte(`\u`)
)
