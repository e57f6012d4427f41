package mock

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

// Presidio analyzer (POST .../analyze) and anonymizer (POST .../anonymize)
// as their REST containers document them.
//
// Analyzer: {"text", "language", "entities"?, "score_threshold"?} answers
// [{"entity_type","start","end","score","analysis_explanation",
// "recognition_metadata"}], start/end in characters (code points, as
// Python indexes strings). Recognizers are regexes: EMAIL_ADDRESS (1.0),
// US_SSN (0.85), PHONE_NUMBER (0.75), CREDIT_CARD (1.0, Luhn-checked),
// IP_ADDRESS (0.6), and PERSON (0.85) for the capitalised name after "my
// name is". Only language "en" is served (another answers 500 as Presidio
// does when no recognizer matches the language).
//
// Anonymizer: {"text", "analyzer_results":[{entity_type,start,end,score}],
// "anonymizers": {"DEFAULT"|<ENTITY>: {"type": replace|redact|mask|hash, ...}}}
// answers {"text", "items":[{start,end,entity_type,text,operator}]}:
// replace uses new_value or "<ENTITY_TYPE>", mask replaces chars_to_mask
// characters with masking_char (from_end), hash is sha256 (or hash_type
// sha512) hex, redact removes the entity. Overlapping results: the one
// starting first wins (the higher score on a tie).
//
// A /flag-on=<word>/ segment in the analyzer's base URL reports every
// occurrence of <word> as a PERSON (0.85): the way to find an entity in an
// upstream's fixed answer in a gateway test.
//
// Verdict knob: a text containing [malformed] gets a 200 answer that is
// not the documented shape. The route knobs (latency, status, ...) apply.
var (
	presidioAnalyzeRoute = route{
		method:      fasthttp.MethodPost,
		match:       func(path []byte) bool { return bytes.HasSuffix(path, strAnalyzePath) },
		serve:       (*Server).servePresidioAnalyze,
		appendError: appendPresidioError,
	}
	presidioAnonymizeRoute = route{
		method:      fasthttp.MethodPost,
		match:       func(path []byte) bool { return bytes.HasSuffix(path, strAnonymizePath) },
		serve:       (*Server).servePresidioAnonymize,
		appendError: appendPresidioError,
	}
	strAnalyzePath   = []byte("/analyze")
	strAnonymizePath = []byte("/anonymize")
)

func appendPresidioError(dst []byte, status int, message string) []byte {
	b, _ := json.Marshal(map[string]string{"error": message})
	return append(dst, b...)
}

type presidioRecognizer struct {
	entity string
	score  float64
	re     *regexp.Regexp
	group  int
	check  func(string) bool
}

var presidioRecognizers = []presidioRecognizer{
	{entity: "EMAIL_ADDRESS", score: 1.0, re: regexp.MustCompile(`\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b`)},
	{entity: "US_SSN", score: 0.85, re: regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`)},
	{entity: "PHONE_NUMBER", score: 0.75, re: regexp.MustCompile(`(?:\(\d{3}\) ?|\b\d{3}[-. ])\d{3}[-. ]\d{4}\b`)},
	{entity: "CREDIT_CARD", score: 1.0, re: regexp.MustCompile(`\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,7}\b`), check: luhn},
	{entity: "IP_ADDRESS", score: 0.6, re: regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)},
	{entity: "PERSON", score: 0.85, re: regexp.MustCompile(`(?i:my name is) ([A-Z][a-z]+(?: [A-Z][a-z]+)?)`), group: 1},
}

func luhn(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if n%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n >= 13 && sum%10 == 0
}

// PresidioResult is one analyzer result.
type PresidioResult struct {
	EntityType          string          `json:"entity_type"`
	Start               int             `json:"start"`
	End                 int             `json:"end"`
	Score               float64         `json:"score"`
	AnalysisExplanation json.RawMessage `json:"analysis_explanation,omitempty"`
	RecognitionMetadata map[string]any  `json:"recognition_metadata,omitempty"`
}

// PresidioAnalyze runs the mock's recognizers over text (en).
func PresidioAnalyze(text string, entities []string, threshold float64) []PresidioResult {
	out := []PresidioResult{}
	for _, r := range presidioRecognizers {
		if len(entities) > 0 && !contains(entities, r.entity) {
			continue
		}
		if r.score < threshold {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(text, -1) {
			s, e := m[2*r.group], m[2*r.group+1]
			if r.check != nil && !r.check(text[s:e]) {
				continue
			}
			out = append(out, PresidioResult{EntityType: r.entity, Start: utf8.RuneCountInString(text[:s]),
				End: utf8.RuneCountInString(text[:e]), Score: r.score, AnalysisExplanation: json.RawMessage("null"),
				RecognitionMetadata: map[string]any{"recognizer_name": "Mock" + r.entity + "Recognizer", "recognizer_identifier": "mock-" + strings.ToLower(r.entity)}})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

func (s *Server) servePresidioAnalyze(ctx *fasthttp.RequestCtx, k *Knobs) {
	var req struct {
		Text           *string  `json:"text"`
		Language       string   `json:"language"`
		Entities       []string `json:"entities"`
		ScoreThreshold float64  `json:"score_threshold"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil || req.Text == nil || req.Language == "" {
		s.writeError(ctx, appendPresidioError, fasthttp.StatusBadRequest, "mock: body must be {text, language}")
		return
	}
	if req.Language != "en" {
		s.writeError(ctx, appendPresidioError, fasthttp.StatusInternalServerError, "No matching recognizers were found to serve the request.")
		return
	}
	if strings.Contains(*req.Text, "[malformed]") {
		ctx.SetContentTypeBytes(strJSON)
		ctx.SetBodyString(`[{"entity_type": "EMAIL_ADDRESS", "start": "zero"}]`)
		return
	}
	res := PresidioAnalyze(*req.Text, req.Entities, req.ScoreThreshold)
	if w := guardFlagWord(ctx); w != "" && (len(req.Entities) == 0 || contains(req.Entities, "PERSON")) && 0.85 >= req.ScoreThreshold {
		for off := 0; ; {
			i := strings.Index((*req.Text)[off:], w)
			if i < 0 {
				break
			}
			s := off + i
			res = append(res, PresidioResult{EntityType: "PERSON", Start: utf8.RuneCountInString((*req.Text)[:s]),
				End: utf8.RuneCountInString((*req.Text)[:s+len(w)]), Score: 0.85, AnalysisExplanation: json.RawMessage("null")})
			off = s + len(w)
		}
		sort.SliceStable(res, func(i, j int) bool { return res[i].Start < res[j].Start })
	}
	writeMockJSON(ctx, res)
}

type presidioOperator struct {
	Type        string `json:"type"`
	NewValue    string `json:"new_value"`
	MaskingChar string `json:"masking_char"`
	CharsToMask int    `json:"chars_to_mask"`
	FromEnd     bool   `json:"from_end"`
	HashType    string `json:"hash_type"`
}

type presidioItem struct {
	Start      int    `json:"start"`
	End        int    `json:"end"`
	EntityType string `json:"entity_type"`
	Text       string `json:"text"`
	Operator   string `json:"operator"`
}

// PresidioAnonymize applies ops (by entity type, or DEFAULT) to results in
// text, as the anonymizer does. An error names what is wrong.
func PresidioAnonymize(text string, results []PresidioResult, ops map[string]presidioOperator) (string, []presidioItem, string) {
	runes := []rune(text)
	rs := append([]PresidioResult(nil), results...)
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Start != rs[j].Start {
			return rs[i].Start < rs[j].Start
		}
		return rs[i].Score > rs[j].Score
	})
	var out []rune
	var items []presidioItem
	pos := 0
	for _, r := range rs {
		if r.Start < 0 || r.End > len(runes) || r.Start > r.End {
			return "", nil, "Invalid analyzer result, start and end must be within the text"
		}
		if r.Start < pos {
			continue // overlaps an entity already replaced
		}
		op, ok := ops[r.EntityType]
		if !ok {
			op, ok = ops["DEFAULT"]
		}
		if !ok {
			op = presidioOperator{Type: "replace"}
		}
		orig := string(runes[r.Start:r.End])
		var repl string
		switch op.Type {
		case "replace":
			repl = op.NewValue
			if repl == "" {
				repl = "<" + r.EntityType + ">"
			}
		case "redact":
		case "mask":
			if op.MaskingChar == "" || utf8.RuneCountInString(op.MaskingChar) != 1 || op.CharsToMask < 0 {
				return "", nil, "Invalid input, masking_char must be a single character and chars_to_mask non-negative"
			}
			m := []rune(orig)
			n := min(op.CharsToMask, len(m))
			mc := []rune(op.MaskingChar)[0]
			for i := 0; i < n; i++ {
				if op.FromEnd {
					m[len(m)-1-i] = mc
				} else {
					m[i] = mc
				}
			}
			repl = string(m)
		case "hash":
			switch op.HashType {
			case "", "sha256":
				h := sha256.Sum256([]byte(orig))
				repl = hex.EncodeToString(h[:])
			case "sha512":
				h := sha512.Sum512([]byte(orig))
				repl = hex.EncodeToString(h[:])
			default:
				return "", nil, "Invalid input, hash_type must be sha256 or sha512"
			}
		default:
			return "", nil, "Invalid operator class '" + op.Type + "'."
		}
		out = append(out, runes[pos:r.Start]...)
		start := len(out)
		out = append(out, []rune(repl)...)
		items = append(items, presidioItem{Start: start, End: len(out), EntityType: r.EntityType, Text: repl, Operator: op.Type})
		pos = r.End
	}
	out = append(out, runes[pos:]...)
	return string(out), items, ""
}

func (s *Server) servePresidioAnonymize(ctx *fasthttp.RequestCtx, k *Knobs) {
	var req struct {
		Text            *string                     `json:"text"`
		AnalyzerResults []PresidioResult            `json:"analyzer_results"`
		Anonymizers     map[string]presidioOperator `json:"anonymizers"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil || req.Text == nil {
		s.writeError(ctx, appendPresidioError, fasthttp.StatusUnprocessableEntity, "mock: body must be {text, analyzer_results, anonymizers}")
		return
	}
	if strings.Contains(*req.Text, "[malformed]") {
		ctx.SetContentTypeBytes(strJSON)
		ctx.SetBodyString(`{"items": []}`)
		return
	}
	text, items, problem := PresidioAnonymize(*req.Text, req.AnalyzerResults, req.Anonymizers)
	if problem != "" {
		s.writeError(ctx, appendPresidioError, fasthttp.StatusUnprocessableEntity, problem)
		return
	}
	if items == nil {
		items = []presidioItem{}
	}
	writeMockJSON(ctx, map[string]any{"text": text, "items": items})
}
