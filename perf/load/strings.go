package load

// Precomputed JSON tokens. They are read-only; never append to them in place.
var (
	strTrue  = []byte("true")
	strFalse = []byte("false")
)

// DefaultBody is the built-in request body: a realistic ~1 KB chat completion request
// (system prompt, a short exchange, a question), so that request parsing and forwarding
// costs look like production ones. Run sets its model and stream members. It is
// read-only.
var DefaultBody = []byte(`{"model":"gpt-4o","messages":[` +
	`{"role":"system","content":"You are a concise assistant for an online hardware store. Answer in plain English, ` +
	`use short paragraphs, and say so when you are not sure. Never invent order numbers, prices or delivery dates; ` +
	`ask the customer for them instead. When a question is about safety, recommend contacting a professional."},` +
	`{"role":"user","content":"Hi! I bought a cordless drill from you last month and the battery already drains in ` +
	`about twenty minutes. Is that normal for a 2 Ah pack?"},` +
	`{"role":"assistant","content":"Twenty minutes of continuous drilling is within the usual range for a 2 Ah pack, ` +
	`but not for light use. Could you tell me what you were drilling into and whether the charger shows a full charge?"},` +
	`{"role":"user","content":"Mostly screws into softwood for shelves, maybe fifty of them, and the charger light turns ` +
	`green after about an hour. Should I ask for a replacement battery, or is there something I can check first?"}],` +
	`"temperature":0.7,"max_tokens":256,"user":"gwload"}`)
