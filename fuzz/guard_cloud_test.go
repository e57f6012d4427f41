package fuzz

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/aliyunguard"
	"gw/edge/guard/aliyunsign"
	"gw/edge/guard/azureshield"
	"gw/edge/guard/azuretext"
	"gw/edge/guard/bedrockguard"
)

// The cloud guardrail kinds' answer readers never panic, and a reader's
// verdict never carries text from the answer beyond a short name.

func cloudGuardrail(kind string, o resources.GuardrailOptions) *resources.Guardrail {
	return &resources.Guardrail{Name: "fz", Kind: kind, TimeoutMS: 1000, Options: o}
}

func FuzzGuardCloudAzureText(f *testing.F) {
	f.Add(`{"blocklistsMatch":[],"categoriesAnalysis":[{"category":"Hate","severity":2}]}`)
	f.Add(`{"blocklistsMatch":[{"blocklistName":"b"}],"categoriesAnalysis":[]}`)
	f.Add(`{"categoriesAnalysis":[{"category":"Violence","severity":7.5}]}`)
	f.Add(`{"categoriesAnalysis":"x"}`)
	ck, err := azuretext.New(cloudGuardrail(resources.GuardrailAzureContentSafetyTextModeration, &resources.AzureTextModerationOptions{
		Endpoint: "http://127.0.0.1:1", APIKey: resources.NewSecret("k"), Categories: resources.AzureTextCategories,
		SeverityThreshold: 2, OutputType: "FourSeverityLevels"}))
	if err != nil {
		f.Fatal(err)
	}
	c := ck.(*azuretext.Checker)
	f.Fuzz(func(t *testing.T, resp string) {
		rule, err := c.Judge([]byte(resp))
		if err == nil && rule != "" && rule != "blocklist" && !strings.Contains("Hate Sexual SelfHarm Violence", rule) {
			t.Fatalf("rule %q is not a category", rule)
		}
	})
}

func FuzzGuardCloudAzureShield(f *testing.F) {
	f.Add(`{"userPromptAnalysis":{"attackDetected":true},"documentsAnalysis":[]}`, false)
	f.Add(`{"userPromptAnalysis":{},"documentsAnalysis":[{"attackDetected":false}]}`, true)
	ck, err := azureshield.New(cloudGuardrail(resources.GuardrailAzureContentSafety, &resources.AzureContentSafetyOptions{
		Endpoint: "http://127.0.0.1:1", APIKey: resources.NewSecret("k")}))
	if err != nil {
		f.Fatal(err)
	}
	c := ck.(*azureshield.Checker)
	f.Fuzz(func(t *testing.T, resp string, doc bool) { _, _ = c.Judge([]byte(resp), doc) })
}

func FuzzGuardCloudAliyunGuardrail(f *testing.F) {
	f.Add(`{"Suggestion":"block","Detail":[{"Type":"promptAttack","Suggestion":"block"}]}`)
	f.Add(`{"RiskLevel":"high"}`)
	f.Add(`{"Detail":[{"Type":"a b","Suggestion":"block"}]}`)
	f.Fuzz(func(t *testing.T, data string) {
		rule, err := aliyunguard.Verdict([]byte(data))
		if err == nil && len(rule) > 64 {
			t.Fatalf("rule too long: %q", rule)
		}
	})
}

func FuzzGuardCloudBedrock(f *testing.F) {
	f.Add(`{"action":"GUARDRAIL_INTERVENED","assessments":[{"sensitiveInformationPolicy":{"piiEntities":[{"action":"ANONYMIZED"}]}}],"outputs":[{"text":"{EMAIL}"},{"text":"b"}]}`)
	f.Add(`{"action":"GUARDRAIL_INTERVENED","assessments":[{"topicPolicy":{"topics":[{"action":"BLOCKED"}]}}]}`)
	f.Add(`{"action":"NONE"}`)
	o := &resources.BedrockGuardrailOptions{GuardrailID: "g", GuardrailVersion: "1", Region: "us-east-1", LatencyMode: resources.BedrockLatencySerial}
	c, err := bedrockguard.NewChecker("fz", o, func(string) (string, bool) { return "http://127.0.0.1:1", true })
	if err != nil {
		f.Fatal(err)
	}
	req := &guard.Request{Texts: []guard.Text{{Data: []byte("a@b.cd")}, {Data: []byte("b")}}}
	f.Fuzz(func(t *testing.T, resp string) {
		var v guard.Verdict
		err := c.Judge([]byte(resp), req, []int{0, 1}, &v)
		if err != nil && (v.Action != guard.Allow || len(v.Masks) != 0) {
			t.Fatalf("an error left a verdict: %v %d", v.Action, len(v.Masks))
		}
		for _, m := range v.Masks {
			if m.Index < 0 || m.Index > 1 {
				t.Fatalf("mask index %d", m.Index)
			}
		}
	})
}

// FuzzGuardCloudAliyunEncode: the canonical encoding decodes back to its
// input and leaves only unreserved characters and %XX.
func FuzzGuardCloudAliyunEncode(f *testing.F) {
	f.Add("llm_query_moderation")
	f.Add(`{"content":"a b+c*~é"}`)
	f.Fuzz(func(t *testing.T, s string) {
		e := aliyunsign.Encode(s)
		back, err := url.PathUnescape(e)
		if err != nil || back != s {
			t.Fatalf("Encode(%q) = %q does not decode back (%v)", s, e, err)
		}
		if strings.ContainsAny(e, " +*/") || !utf8.ValidString(e) {
			t.Fatalf("Encode(%q) = %q", s, e)
		}
	})
}
