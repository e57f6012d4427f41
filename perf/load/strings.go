package load

// Precomputed JSON tokens. They are read-only; never append to them in place.
var (
	strTrue  = []byte("true")
	strFalse = []byte("false")
)

// The conversation of the built-in bodies: a system prompt, a short exchange, a question.
const (
	promptSystem = `You are a concise assistant for an online hardware store. Answer in plain English, ` +
		`use short paragraphs, and say so when you are not sure. Never invent order numbers, prices or delivery dates; ` +
		`ask the customer for them instead. When a question is about safety, recommend contacting a professional.`
	promptUser1 = `Hi! I bought a cordless drill from you last month and the battery already drains in ` +
		`about twenty minutes. Is that normal for a 2 Ah pack?`
	promptAssistant = `Twenty minutes of continuous drilling is within the usual range for a 2 Ah pack, ` +
		`but not for light use. Could you tell me what you were drilling into and whether the charger shows a full charge?`
	promptUser2 = `Mostly screws into softwood for shelves, maybe fifty of them, and the charger light turns ` +
		`green after about an hour. Should I ask for a replacement battery, or is there something I can check first?`
	// turns are the user and assistant messages, the same in all three formats.
	turns = `{"role":"user","content":"` + promptUser1 + `"},` +
		`{"role":"assistant","content":"` + promptAssistant + `"},` +
		`{"role":"user","content":"` + promptUser2 + `"}`
)

// The built-in request bodies carry the same ~1 KB conversation in each format, so that
// request parsing, conversion and forwarding costs look like production ones. Run sets
// their model and stream members. They are read-only.
var (
	// DefaultBody is the built-in chat completion request (FormatChat).
	DefaultBody = []byte(`{"model":"` + DefaultModel + `","messages":[` +
		`{"role":"system","content":"` + promptSystem + `"},` + turns + `],` +
		`"temperature":0.7,"max_tokens":256,"user":"gwload"}`)
	// DefaultMessagesBody is the built-in Anthropic Messages request (FormatMessages).
	DefaultMessagesBody = []byte(`{"model":"` + DefaultMessagesModel + `","max_tokens":256,` +
		`"system":"` + promptSystem + `","messages":[` + turns + `],` +
		`"temperature":0.7,"metadata":{"user_id":"gwload"}}`)
	// DefaultResponsesBody is the built-in OpenAI Responses request (FormatResponses). It
	// asks not to store the response.
	DefaultResponsesBody = []byte(`{"model":"` + DefaultModel + `","instructions":"` + promptSystem + `",` +
		`"input":[` + turns + `],"temperature":0.7,"max_output_tokens":256,"store":false}`)
)
