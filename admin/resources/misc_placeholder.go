package resources

// TODO(helper-5): replace with the full schemas of these collections.

type OIDCProvider struct {
	Index int
	ID    string
	Name  string
}
type MCPAuthSettings struct {
	ID string
}
type ClaimMapping struct {
	Index int
	ID    string
	Name  string
}
type MCPServer struct {
	Index   int
	ID      string
	Name    string
	IDField string
}
type A2AAgent struct {
	Index   int
	ID      string
	Name    string
	IDField string
}
type PassthroughRoute struct {
	Index   int
	ID      string
	Name    string
	IDField string
}
type CachePolicy struct {
	Index int
	ID    string
	Name  string
}
type ObservabilityExporter struct {
	Index int
	ID    string
	Name  string
}
type RateLimitPolicy struct {
	Index int
	ID    string
	Name  string
}

func (l *loader) decodeOIDCProvider(e *entry, o *obj) {
	p := &OIDCProvider{Index: e.idx, Name: o.reqStr("name")}
	o.skipAll()
	l.res.OIDCProviders = append(l.res.OIDCProviders, p)
}
func (l *loader) decodeMCPAuthSettings(e *entry, o *obj) { o.skipAll() }
func (l *loader) decodeClaimMapping(e *entry, o *obj)    { o.skipAll() }
func (l *loader) decodeMCPServer(e *entry, o *obj) {
	s := &MCPServer{Index: e.idx, Name: o.reqStr("name")}
	o.skipAll()
	l.res.MCPServers = append(l.res.MCPServers, s)
}
func (l *loader) decodeA2AAgent(e *entry, o *obj)              { o.skipAll() }
func (l *loader) decodePassthroughRoute(e *entry, o *obj)      { o.skipAll() }
func (l *loader) decodeCachePolicy(e *entry, o *obj)           { o.skipAll() }
func (l *loader) decodeObservabilityExporter(e *entry, o *obj) { o.skipAll() }
func (l *loader) decodeRateLimitPolicy(e *entry, o *obj)       { o.skipAll() }
func (l *loader) checkMiscIdentities()                         {}
func (l *loader) resolveMiscRefs(mi *modelIndex, pkByName, pkByID map[string]*ProviderKey, pkNames []string) {
}
func (l *loader) miscIDs() []EntryID { return nil }
