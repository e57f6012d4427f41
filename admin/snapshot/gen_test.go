package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// bigFile renders a resource file with nModels direct models (plus one routing
// group per 10 models) and nKeys caller keys supplied as key_hash.
func bigFile(nModels, nKeys int) []byte {
	var b strings.Builder
	b.WriteString("_format_version: \"1\"\nprovider_keys:\n  - display_name: oa\n    api_key: ${OPENAI_KEY}\n    api_base: http://127.0.0.1:9999/v1\nmodels:\n")
	for i := 0; i < nModels; i++ {
		n := strconv.Itoa(i)
		b.WriteString("  - display_name: team-" + strconv.Itoa(i%10) + "/m" + n + "\n    provider: openai\n    model_name: gpt-" + n + "\n    provider_key: oa\n    timeout: 30000\n    rate_limit: {rpm: 600}\n")
	}
	for i := 0; i+9 < nModels; i += 10 {
		b.WriteString("  - display_name: group-" + strconv.Itoa(i) + "\n    routing:\n      strategy: round_robin\n      targets:\n")
		for j := i; j < i+3; j++ {
			b.WriteString("        - {model: team-" + strconv.Itoa(j%10) + "/m" + strconv.Itoa(j) + ", weight: 2}\n")
		}
	}
	b.WriteString("api_keys:\n")
	for i := 0; i < nKeys; i++ {
		n := strconv.Itoa(i)
		h := sha256.Sum256([]byte("key-" + n))
		b.WriteString("  - display_name: k" + n + "\n    key_hash: " + hex.EncodeToString(h[:]) + "\n")
		switch i % 3 {
		case 0:
			b.WriteString("    allowed_models: [\"*\"]\n")
		case 1:
			b.WriteString("    allowed_models: [\"team-" + strconv.Itoa(i%10) + "/*\"]\n")
		default:
			b.WriteString("    allowed_models: [team-1/m1, team-2/m2]\n    rate_limit: {rpm: 100, tpm: 100000}\n")
		}
	}
	return []byte(b.String())
}

func testEnv(k string) (string, bool) {
	if k == "OPENAI_KEY" {
		return "sk-test", true
	}
	return "", false
}
