package guard

import (
	"errors"

	"gw/sse/rawjson"
)

// Formats of the caller endpoints beyond chat (embeddings, completions,
// rerank): the texts their bodies carry.
const (
	EmbeddingsRequest  Format = ResponsesAnswer + 1 + iota // input: a string or an array of strings
	CompletionsRequest                                     // prompt: a string or an array of strings
	RerankRequest                                          // query, and documents (strings, or objects' string members)
	CompletionsAnswer                                      // choices[].text
	TextlessAnswer                                         // an answer without text (embedding vectors, rerank scores)
	ImagesRequest                                          // prompt
	ImagesAnswer                                           // data[].revised_prompt
	SpeechRequest                                          // input: the text to speak
)

// ErrTokens is returned for an input given as token IDs: there is no text
// to judge, so the chain's fail-open rules decide as for any body that
// cannot be read (never passed unjudged).
var ErrTokens = errors.New("guard: the input is token IDs, which carry no text to judge")

// endpointBody walks the bodies of the endpoint formats.
func (x *Extractor) endpointBody(f Format) error {
	switch f {
	case EmbeddingsRequest:
		return x.textOrList("input")
	case CompletionsRequest, ImagesRequest:
		return x.textOrList("prompt")
	case SpeechRequest:
		return x.textOrList("input")
	case RerankRequest:
		if v, k, ok := rawjson.Get(x.body, "query"); ok && k == rawjson.String {
			x.set(RoleUser, PartContent, false, 0)
			x.str(v)
		}
		docs, k, ok := rawjson.Get(x.body, "documents")
		if !ok || k != rawjson.Array {
			return nil
		}
		_ = rawjson.ForEachElem(docs, func(i int, d []byte, k rawjson.Kind) bool {
			x.set(RoleUser, PartContent, false, i+1)
			switch k {
			case rawjson.String:
				x.str(d)
			case rawjson.Object: // {"text": ...} or a structured document
				_ = rawjson.ForEachKey(d, func(_, v []byte, vk rawjson.Kind) bool {
					if vk == rawjson.String {
						x.str(v)
					}
					return true
				})
			}
			return true
		})
		return nil
	case CompletionsAnswer:
		ch, k, ok := rawjson.Get(x.body, "choices")
		if !ok || k != rawjson.Array {
			return nil
		}
		x.set(RoleAssistant, PartContent, false, msgAnswer)
		_ = rawjson.ForEachElem(ch, func(_ int, c []byte, k rawjson.Kind) bool {
			if k == rawjson.Object {
				if t, tk, ok := rawjson.Get(c, "text"); ok && tk == rawjson.String {
					x.str(t)
				}
			}
			return true
		})
		return nil
	case TextlessAnswer:
		return nil
	case ImagesAnswer:
		data, k, ok := rawjson.Get(x.body, "data")
		if !ok || k != rawjson.Array {
			return nil
		}
		x.set(RoleAssistant, PartContent, false, msgAnswer)
		_ = rawjson.ForEachElem(data, func(_ int, d []byte, k rawjson.Kind) bool {
			if k == rawjson.Object {
				if t, tk, ok := rawjson.Get(d, "revised_prompt"); ok && tk == rawjson.String {
					x.str(t)
				}
			}
			return true
		})
		return nil
	}
	return ErrBody
}

// textOrList adds the member key given as a string or an array of strings
// (each its own text). Token IDs (an array of numbers, or of arrays) are
// ErrTokens.
func (x *Extractor) textOrList(key string) error {
	v, k, ok := rawjson.Get(x.body, key)
	switch {
	case !ok:
		return nil
	case k == rawjson.String:
		x.set(RoleUser, PartContent, false, 0)
		x.str(v)
		return nil
	case k != rawjson.Array:
		return ErrBody
	}
	var err error
	_ = rawjson.ForEachElem(v, func(i int, e []byte, ek rawjson.Kind) bool {
		if ek != rawjson.String {
			err = ErrTokens
			return false
		}
		x.set(RoleUser, PartContent, false, i)
		x.str(e)
		return true
	})
	return err
}
