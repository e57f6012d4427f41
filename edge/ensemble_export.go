package edge

import "gw/admin/snapshot"

// EnsembleBodies builds, from a caller's chat body, the body a panel
// member with the given temperature and seed literals (nil: none) is sent
// and the judge's body given the members' answer texts. Exported for the
// fuzz targets (fuzz/ensemble_test.go); the proxy uses the unexported
// functions directly.
func EnsembleBodies(body, temperature, seed []byte, answers [][]byte) (memberB, judgeB []byte, err error) {
	em := &snapshot.EnsembleMember{Temperature: temperature, Seed: seed}
	var scratch [2][]byte
	memberB = memberBody(nil, &scratch, body, em)
	ms := make([]member, len(answers))
	for i, a := range answers {
		ms[i].text, ms[i].ok = a, true
	}
	judgeB, err = judgeBody(nil, &scratch, body, "", ms)
	return memberB, judgeB, err
}

// EnsembleAnswerText appends the text of a chat completion's first
// choice, as the ensemble reads a member's answer (for the fuzz targets).
func EnsembleAnswerText(dst, body []byte) ([]byte, bool) { return answerText(dst, body) }
