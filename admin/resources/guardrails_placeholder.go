package resources

// TODO(helper-4): replace with the full guardrail schemas.

type Guardrail struct {
	Index int
	ID    string
	Name  string
	Kind  string
}
type GuardrailAttachment struct {
	Index int
	ID    string
}

func (l *loader) decodeGuardrail(e *entry, o *obj)           { o.skipAll() }
func (l *loader) decodeGuardrailAttachment(e *entry, o *obj) { o.skipAll() }
func (l *loader) checkGuardrailIdentities()                  {}
func (l *loader) resolveGuardrailRefs(mi *modelIndex)        {}
func (l *loader) guardrailIDs() []EntryID                    { return nil }
