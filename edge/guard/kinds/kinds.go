// Package kinds is the table of the guardrail kinds built into gw: kind →
// constructor. It imports every kind package; the engine (edge/guard)
// imports none, and cmd/gw injects the table where snapshots compile.
package kinds

import (
	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/aliyunguard"
	"gw/edge/guard/aliyuntext"
	"gw/edge/guard/azureshield"
	"gw/edge/guard/azuretext"
	"gw/edge/guard/bedrockguard"
	"gw/edge/guard/custom"
	"gw/edge/guard/keyword"
	"gw/edge/guard/lakera"
	"gw/edge/guard/openaimod"
	"gw/edge/guard/pii"
	"gw/edge/guard/presidio"
	"gw/edge/guard/semantic"
)

// Table returns the kinds this build runs. A kind missing here still loads;
// attached, its checks fail and its fail-open settings decide.
func Table() guard.Table {
	return guard.Table{
		resources.GuardrailKeyword:          keyword.New,
		resources.GuardrailCustom:           custom.New,
		resources.GuardrailPII:              pii.New,
		resources.GuardrailPresidio:         presidio.New,
		resources.GuardrailOpenAIModeration: openaimod.New,
		resources.GuardrailLakera:           lakera.New,
		// Cloud kinds (docs/GUARDRAILS_CLOUD.md).
		resources.GuardrailAzureContentSafety:               azureshield.New,
		resources.GuardrailAzureContentSafetyTextModeration: azuretext.New,
		resources.GuardrailAliyunTextModeration:             aliyuntext.New,
		resources.GuardrailAliyunAIGuardrail:                aliyunguard.New,
		resources.GuardrailBedrock:                          bedrockguard.New,
		resources.GuardrailSemantic:                         semantic.New,
	}
}
