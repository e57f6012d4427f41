package resources

import (
	"strings"

	"gw/adapters/headers"
)

// HeaderTemplate is a default header whose value may hold per-request
// variables (written $${request.api_key.team_id} in the file, which
// interpolation turns into ${request.api_key.team_id}).
type HeaderTemplate struct {
	Name  string
	Parts []TemplatePart
}

// TemplatePart is literal text or one request variable.
type TemplatePart struct {
	Literal string
	Var     RequestVar // VarNone for literal parts
}

// RequestVar names a per-request value usable in default headers. It is
// headers.Var: the adapters index their per-request values (headers.Vars)
// with it.
type RequestVar = headers.Var

// Request variables. A header whose variable has no value for a request is dropped.
const (
	VarNone           = headers.VarNone
	VarAPIKeyID       = headers.VarAPIKeyID
	VarAPIKeyName     = headers.VarAPIKeyName
	VarAPIKeyTeamID   = headers.VarAPIKeyTeamID
	VarAPIKeyUserID   = headers.VarAPIKeyUserID
	VarAPIKeyUserName = headers.VarAPIKeyUserName
	VarModel          = headers.VarModel
	VarRequestID      = headers.VarRequestID
)

// RequestVars maps the names accepted in ${...} to variables.
var RequestVars = map[string]RequestVar{
	"request.api_key.id":           VarAPIKeyID,
	"request.api_key.display_name": VarAPIKeyName,
	"request.api_key.team_id":      VarAPIKeyTeamID,
	"request.api_key.user_id":      VarAPIKeyUserID,
	"request.api_key.user_name":    VarAPIKeyUserName,
	"request.model":                VarModel,
	"request.id":                   VarRequestID,
}

// IsStatic reports whether the template has no variables.
func (t HeaderTemplate) IsStatic() bool {
	for _, p := range t.Parts {
		if p.Var != VarNone {
			return false
		}
	}
	return true
}

func parseHeaderTemplate(v string) (HeaderTemplate, string) {
	var t HeaderTemplate
	for v != "" {
		i := strings.Index(v, "${")
		if i < 0 {
			t.Parts = append(t.Parts, TemplatePart{Literal: v})
			break
		}
		if i > 0 {
			t.Parts = append(t.Parts, TemplatePart{Literal: v[:i]})
		}
		end := strings.IndexByte(v[i:], '}')
		if end < 0 {
			return t, "unclosed \"${\" in request variable"
		}
		name := v[i+2 : i+end]
		rv, ok := RequestVars[name]
		if !ok {
			return t, "unknown request variable \"" + name + "\"; known: request.api_key.id, request.api_key.display_name, request.api_key.team_id, request.api_key.user_id, request.api_key.user_name, request.model, request.id"
		}
		t.Parts = append(t.Parts, TemplatePart{Var: rv})
		v = v[i+end+1:]
	}
	for _, p := range t.Parts {
		if strings.ContainsAny(p.Literal, "\r\n\x00") {
			return t, "header value must not contain CR, LF or NUL"
		}
	}
	return t, ""
}
