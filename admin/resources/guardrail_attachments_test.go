package resources

import (
	"strings"
	"testing"
)

// attBase has guardrails g (keyword), p (pii) and f (unknown kind); tests
// append guardrail_attachments entries.
const attBase = grBase + `  - name: g
    kind: keyword
    patterns: []
  - name: p
    kind: pii
  - name: f
    kind: future_kind
guardrail_attachments:
`

func att(guardrail, scopeType, scopeID string) string {
	return "  - {guardrail_id: " + guardrail + ", scope_type: " + scopeType + ", scope_id: " + scopeID + "}\n"
}

func TestGuardrailAttachmentErrors(t *testing.T) {
	f := func(entries, want string) {
		t.Helper()
		grErrLine(t, attBase+entries, want)
	}
	f("  - {scope_type: model, scope_id: gpt}\n", "guardrail_attachments[0]: guardrail_id: required")
	f("  - {guardrail_id: g, scope_id: gpt}\n", "guardrail_attachments[0]: scope_type: required; one of model, api_key, mcp_server, passthrough_route, team")
	f("  - {guardrail_id: g, scope_type: model}\n", "guardrail_attachments[0]: scope_id: required")
	f(att("g", "org", "acme"), `guardrail_attachments[0]: scope_type: unknown value "org"; allowed: model, api_key, mcp_server, passthrough_route, team`)
	f(att("g", "model", `""`), "guardrail_attachments[0]: scope_id: must not be empty")
	// Only the identity triple is accepted.
	f("  - {guardrail_id: g, scope_type: model, scope_id: gpt, enabled: true}\n", "guardrail_attachments[0] (identity=g/model/gpt): enabled: unknown field")
	f("  - {guardrail_id: g, scope_type: model, scope_id: gpt, id: x}\n", "guardrail_attachments[0] (identity=g/model/gpt): id: unknown field")
	// Unknown references list what is available.
	f(att("nope", "model", "gpt"), `guardrail_attachments[0] (identity=nope/model/gpt): guardrail_id: unknown guardrail "nope"; available: f, g, p`)
	f(att("g", "model", "gpt-x"), `guardrail_attachments[0] (identity=g/model/gpt-x): scope_id: unknown model "gpt-x"; available: emb, gpt`)
	f(att("g", "api_key", "other"), `guardrail_attachments[0] (identity=g/api_key/other): scope_id: unknown caller key "other"; available: app`)
	f(att("g", "mcp_server", "fs"), `guardrail_attachments[0] (identity=g/mcp_server/fs): scope_id: unknown MCP server "fs"; available: (none)`)
	f(att("g", "passthrough_route", "oai"), `guardrail_attachments[0] (identity=g/passthrough_route/oai): scope_id: unknown passthrough route "oai"; available: (none)`)
	// Duplicates, also when one side uses derived IDs.
	f(att("g", "model", "gpt")+att("p", "model", "gpt")+att("g", "model", "gpt"),
		`guardrail_attachments[2] (identity=g/model/gpt): duplicate attachment of guardrail "g" to model "gpt"; also attached by guardrail_attachments[0]`)
	f(att("g", "model", "gpt")+att(DeriveID(KindGuardrail, "g"), "model", DeriveID(KindModel, "gpt")),
		`guardrail_attachments[1] (identity=g/model/gpt): duplicate attachment of guardrail "g" to model "gpt"; also attached by guardrail_attachments[0]`)
	f(att("g", "api_key", "app")+att("g", "api_key", DeriveID(KindAPIKey, "app")),
		`guardrail_attachments[1] (identity=g/api_key/app): duplicate attachment of guardrail "g" to api_key "app"; also attached by guardrail_attachments[0]`)
	f(att("f", "team", "t-1")+att("f", "team", "t-1"),
		`guardrail_attachments[1] (identity=f/team/t-1): duplicate attachment of guardrail "f" to team "t-1"; also attached by guardrail_attachments[0]`)
}

func TestGuardrailAttachmentResolve(t *testing.T) {
	r := grMustLoad(t, attBase+
		att("g", "model", "gpt")+
		att(DeriveID(KindGuardrail, "p"), "model", DeriveID(KindModel, "emb"))+
		att("p", "api_key", DeriveID(KindAPIKey, "app"))+
		att("g", "team", "Team-42")+
		att("f", "model", "gpt")+
		att("g", "model", "emb"))
	as := r.Resources.GuardrailAttachments
	if len(as) != 6 {
		t.Fatalf("got %d attachments", len(as))
	}
	check := func(i int, gname, scopeType, scopeName string) *GuardrailAttachment {
		t.Helper()
		a := as[i]
		if a.Index != i || a.GuardrailName != gname || a.Scope != (GuardrailScope{scopeType, scopeName}) {
			t.Fatalf("attachment %d: %+v", i, a)
		}
		if want := DeriveID(KindGuardrailAttachment, gname+"/"+scopeType+"/"+scopeName); a.ID != want {
			t.Fatalf("attachment %d ID: got %s; want %s", i, a.ID, want)
		}
		return a
	}
	if a := check(0, "g", "model", "gpt"); a.Model == nil || a.Model.DisplayName != "gpt" || a.Guardrail == nil || a.Guardrail.Name != "g" {
		t.Fatalf("by name: %+v", a)
	}
	// By derived ID: resolved to canonical names, same ID as by name.
	if a := check(1, "p", "model", "emb"); a.Model == nil || a.Guardrail.Kind != GuardrailPII || a.GuardrailRef != DeriveID(KindGuardrail, "p") {
		t.Fatalf("by ID: %+v", a)
	}
	if a := check(2, "p", "api_key", "app"); a.APIKey == nil || a.APIKey.DisplayName != "app" {
		t.Fatalf("api_key: %+v", a)
	}
	// Team IDs are kept verbatim.
	if a := check(3, "g", "team", "Team-42"); a.Model != nil || a.APIKey != nil {
		t.Fatalf("team: %+v", a)
	}
	// A guardrail of unknown kind is a valid target that inspects nothing.
	if a := check(4, "f", "model", "gpt"); a.Guardrail != nil {
		t.Fatalf("unknown kind: %+v", a)
	}
	check(5, "g", "model", "emb")

	var ids []string
	for _, id := range r.IDs {
		if id.Collection == CollGuardrailAttachments {
			ids = append(ids, id.Identity)
		}
	}
	if got := strings.Join(ids, ","); got != "g/model/gpt,p/model/emb,p/api_key/app,g/team/Team-42,f/model/gpt,g/model/emb" {
		t.Fatalf("attachment IDs: %s", got)
	}
}

// TestGuardrailAttachmentCatalogScopes resolves mcp_server and
// passthrough_route scopes against entries built in place, so the test does
// not depend on those collections' full schemas.
func TestGuardrailAttachmentCatalogScopes(t *testing.T) {
	l := &loader{d: &decoder{env: envOf(testEnv)}, res: &Resources{
		Guardrails:        []*Guardrail{{Index: 0, Name: "g", ID: DeriveID(KindGuardrail, "g"), Kind: GuardrailKeyword, Enabled: true, HookPoint: HookPointBoth}},
		MCPServers:        []*MCPServer{{Name: "fs", ID: DeriveID(KindMCPServer, "fs")}, {Name: "git", ID: DeriveID(KindMCPServer, "git")}},
		PassthroughRoutes: []*PassthroughRoute{{Name: "oai", ID: DeriveID(KindPassthroughRoute, "oai")}},
		GuardrailAttachments: []*GuardrailAttachment{
			{Index: 0, GuardrailRef: "g", Scope: GuardrailScope{Type: GuardrailScopeMCPServer}, ScopeRef: "fs"},
			{Index: 1, GuardrailRef: "g", Scope: GuardrailScope{Type: GuardrailScopeMCPServer}, ScopeRef: DeriveID(KindMCPServer, "git")},
			{Index: 2, GuardrailRef: "g", Scope: GuardrailScope{Type: GuardrailScopePassthroughRoute}, ScopeRef: DeriveID(KindPassthroughRoute, "oai")},
			{Index: 3, GuardrailRef: "g", Scope: GuardrailScope{Type: GuardrailScopeMCPServer}, ScopeRef: "nope"},
			{Index: 4, GuardrailRef: "g", Scope: GuardrailScope{Type: GuardrailScopePassthroughRoute}, ScopeRef: "oai"},
		},
	}}
	l.resolveGuardrailRefs(l.models())
	as := l.res.GuardrailAttachments
	if as[0].MCPServer == nil || as[0].Scope.Name != "fs" || as[1].MCPServer == nil || as[1].Scope.Name != "git" ||
		as[2].PassthroughRoute == nil || as[2].Scope.Name != "oai" {
		t.Fatalf("catalog scopes: %+v %+v %+v", as[0], as[1], as[2])
	}
	want := []string{
		`guardrail_attachments[3] (identity=g/mcp_server/nope): scope_id: unknown MCP server "nope"; available: fs, git`,
		`guardrail_attachments[4] (identity=g/passthrough_route/oai): duplicate attachment of guardrail "g" to passthrough_route "oai"; also attached by guardrail_attachments[2]`,
	}
	if len(l.d.errs) != len(want) {
		t.Fatalf("errors: %v", l.d.errs)
	}
	for i, w := range want {
		if got := l.d.errs[i].String(); got != w {
			t.Fatalf("error %d: got\n  %s\nwant\n  %s", i, got, w)
		}
	}
}

func TestGuardrailChains(t *testing.T) {
	r := grMustLoad(t, grBase+`  - {name: late, kind: keyword, patterns: [], created_at: "2026-05-01T00:00:00Z"}
  - {name: none-a, kind: keyword, patterns: []}
  - {name: early, kind: keyword, patterns: [], created_at: "2026-01-01T00:00:00Z", hook_point: input}
  - {name: off, kind: keyword, patterns: [], enabled: false, created_at: "2025-01-01T00:00:00Z"}
  - {name: none-b, kind: pii, hook_point: output}
  - {name: mid, kind: pii, created_at: "2026-03-01T08:00:00+08:00"}
  - {name: future, kind: future_kind}
  - {name: same-time, kind: keyword, patterns: [], created_at: "2026-01-01T00:00:00Z", hook_point: output}
guardrail_attachments:
`+att("none-b", "model", "gpt")+
		att("late", "model", "gpt")+
		att("none-a", "model", "gpt")+
		att("off", "model", "gpt")+
		att("future", "model", "gpt")+
		att("same-time", "model", "gpt")+
		att("mid", "model", "gpt")+
		att("early", "model", "gpt")+
		att("late", "team", "t1")+
		att("off", "api_key", "app")+
		att("future", "api_key", "app"))
	chains := r.Resources.GuardrailChains()
	names := func(gs []*Guardrail) string {
		out := make([]string, len(gs))
		for i, g := range gs {
			out[i] = g.Name
		}
		return strings.Join(out, ",")
	}
	c := chains[GuardrailScope{GuardrailScopeModel, "gpt"}]
	if c == nil {
		t.Fatalf("no chain for model gpt: %v", chains)
	}
	// created_at earliest first (early and same-time tie: file order), then
	// those without created_at in file order; disabled and unknown kinds left out.
	if got, want := names(c.Input), "early,mid,late,none-a"; got != want {
		t.Fatalf("input chain: got %s; want %s", got, want)
	}
	if got, want := names(c.Output), "same-time,mid,late,none-a,none-b"; got != want {
		t.Fatalf("output chain: got %s; want %s", got, want)
	}
	if c := chains[GuardrailScope{GuardrailScopeTeam, "t1"}]; c == nil || names(c.Input) != "late" || names(c.Output) != "late" {
		t.Fatalf("team chain: %+v", c)
	}
	if c, ok := chains[GuardrailScope{GuardrailScopeAPIKey, "app"}]; ok {
		t.Fatalf("api key with only disabled and unknown-kind guardrails must have no chain: %+v", c)
	}
	if len(chains) != 2 {
		t.Fatalf("got %d chains; want 2", len(chains))
	}
}

// TestGuardrailAttachmentCatalogFile resolves mcp_server and passthrough_route
// scopes through a whole file (either identity spelling, by name and by ID).
func TestGuardrailAttachmentCatalogFile(t *testing.T) {
	const catalog = `mcp_servers:
  - {display_name: gh, url: https://gh.example.com/mcp}
passthrough_routes:
  - {name: files, path: /openai/, provider_key: oa, upstream: https://api.openai.com/v1}
`
	r := grMustLoad(t, catalog+attBase+att("g", "mcp_server", "gh")+att("p", "mcp_server", DeriveID(KindMCPServer, "gh"))+
		att("g", "passthrough_route", DeriveID(KindPassthroughRoute, "files"))+att("p", "passthrough_route", "files"))
	as := r.Resources.GuardrailAttachments
	if as[0].MCPServer == nil || as[1].Scope != (GuardrailScope{GuardrailScopeMCPServer, "gh"}) ||
		as[2].PassthroughRoute == nil || as[2].Scope != (GuardrailScope{GuardrailScopePassthroughRoute, "files"}) {
		t.Fatalf("catalog scopes: %+v %+v %+v", as[0], as[1], as[2])
	}
	grErrLine(t, catalog+attBase+att("g", "mcp_server", "gl"),
		`guardrail_attachments[0] (identity=g/mcp_server/gl): scope_id: unknown MCP server "gl"; available: gh`)
	grErrLine(t, catalog+attBase+att("g", "passthrough_route", "gh"),
		`guardrail_attachments[0] (identity=g/passthrough_route/gh): scope_id: unknown passthrough route "gh"; available: files`)
}

// TestGuardrailAttachmentAfterDecodeErrors: references run even when entries
// failed to decode; a partial guardrail still resolves, and the parts of an
// attachment that did decode are still checked.
func TestGuardrailAttachmentAfterDecodeErrors(t *testing.T) {
	f := func(src string, want ...string) {
		t.Helper()
		r := grLoad(src)
		got := make([]string, len(r.Errors))
		for i, e := range r.Errors {
			got[i] = e.String()
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	f(grBase+"  - name: g\nguardrail_attachments:\n"+att("g", "model", "gpt"),
		"guardrails[0] (name=g): kind: required")
	f(grBase+"  - {name: g, kind: keyword, patterns: [{kind: regex, value: \"(\"}]}\nguardrail_attachments:\n"+att("g", "model", "gpt"),
		"guardrails[0] (name=g): patterns[0].value: invalid regex: missing closing ) (Go RE2 syntax; lookarounds and backreferences are not supported)")
	f(grBase+"  - {name: g, kind: keyword, patterns: []}\nguardrail_attachments:\n"+att("nope", "org", "gpt-x"),
		`guardrail_attachments[0]: scope_type: unknown value "org"; allowed: model, api_key, mcp_server, passthrough_route, team`,
		`guardrail_attachments[0]: guardrail_id: unknown guardrail "nope"; available: g`)
}
