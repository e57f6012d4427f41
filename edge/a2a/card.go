package a2a

import (
	"errors"
	"strings"

	"gw/sse/rawjson"
)

// ErrCard is returned for an agent card that is not a JSON object.
var ErrCard = errors.New("the agent card is not a JSON object")

// RewriteCard appends to dst the agent's card as gw serves it: every
// address points at gw (`url` becomes gwURL; additionalInterfaces, when
// present, become the one JSON-RPC interface gw relays) and the security
// requirements become gw's own (a bearer caller key), since callers
// authenticate to gw and never to the agent. The authenticated extended
// card is not offered: it would carry the agent's own addresses.
func RewriteCard(dst, card []byte, gwURL string) ([]byte, error) {
	if !rawjson.Valid(card) || rawjson.KindOf(card) != rawjson.Object {
		return dst, ErrCard
	}
	cur, err := dropFoldedKeys(card)
	if err != nil {
		return dst, ErrCard
	}
	q := rawjson.AppendQuote(nil, gwURL)
	if cur, err = rawjson.Set(nil, cur, "url", q); err != nil {
		return dst, ErrCard
	}
	edits := [...]struct {
		key string
		val []byte
		add bool // set even when absent
	}{
		{"preferredTransport", []byte(`"JSONRPC"`), true},
		{"additionalInterfaces", append(append(append([]byte(`[{"url":`), q...), `,"transport":"JSONRPC"}`...), ']'), false},
		{"securitySchemes", []byte(`{"gw":{"type":"http","scheme":"bearer","description":"a gw caller key or a JWT gw accepts"}}`), true},
		{"security", []byte(`[{"gw":[]}]`), true},
		{"supportsAuthenticatedExtendedCard", []byte("false"), false},
	}
	// Card requests are rare: each edit writes a fresh buffer.
	for _, e := range edits {
		if !e.add {
			if _, _, ok := rawjson.Get(cur, e.key); !ok {
				continue
			}
		}
		next, err := rawjson.Set(nil, cur, e.key, e.val)
		if err != nil {
			return dst, ErrCard
		}
		cur = next
	}
	return append(dst, cur...), nil
}

// rewritten names the members RewriteCard sets.
var rewritten = [...]string{"url", "preferredTransport", "additionalInterfaces", "securitySchemes", "security", "supportsAuthenticatedExtendedCard"}

// dropFoldedKeys removes the members whose names equal a rewritten one
// but for case ("URL", "AdditionalInterfaces", also Unicode folds such as
// "ſecurity"): a client that matches names without case, as Go's
// encoding/json does, would read the agent's own address or security from
// them next to gw's.
func dropFoldedKeys(card []byte) ([]byte, error) {
	var drop []string
	err := rawjson.ForEachKey(card, func(key, _ []byte, _ rawjson.Kind) bool {
		name, err := rawjson.AppendUnquote(nil, key)
		if err != nil {
			return true
		}
		for _, r := range rewritten {
			if string(name) != r && strings.EqualFold(string(name), r) {
				drop = append(drop, string(name))
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	cur := card
	for _, k := range drop {
		if cur, err = rawjson.Delete(nil, cur, k); err != nil {
			return nil, err
		}
	}
	return cur, nil
}
