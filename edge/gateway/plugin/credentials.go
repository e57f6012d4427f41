package plugin

import (
	"encoding/json"
	"fmt"

	admingw "gw/admin/gateway"
)

// The auth plugins (key-auth, basic-auth, jwt-auth) share this scaffolding:
// a per-snapshot index of their consumers' credentials and the
// anonymous_consumer fallback.

// CredentialIndex returns the index of auth plugin name's credentials in
// the snapshot, built once per snapshot (every route's instance of the
// plugin shares it): mk compiles one credential (its identifying value,
// consumer and stored configuration) and reports false to leave it out.
func CredentialIndex[T any](env *Env, name string, mk func(id string, con *admingw.Consumer, conf json.RawMessage) (T, bool)) (map[string]T, error) {
	v, err := env.Once(name+"/credentials", func() (any, error) {
		var auth map[string]*admingw.Consumer
		var confs map[string]json.RawMessage
		if env.Snap != nil {
			auth, confs = env.Snap.Auth[name], env.Snap.AuthConf[name]
		}
		m := make(map[string]T, len(auth))
		for id, con := range auth {
			if t, ok := mk(id, con, confs[id]); ok {
				m[id] = t
			}
		}
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string]T), nil
}

// AuthBase is embedded by auth plugins: the anonymous consumer and the
// answer to a request that does not authenticate.
type AuthBase struct {
	Base
	Anonymous *admingw.Consumer
}

// SetAnonymous resolves an anonymous_consumer name ("" for none).
func (a *AuthBase) SetAnonymous(env *Env, name string) error {
	if name == "" {
		return nil
	}
	if env.Snap != nil {
		a.Anonymous = env.Snap.Consumers[name]
	}
	if a.Anonymous == nil {
		return fmt.Errorf("anonymous_consumer %q not found", name)
	}
	return nil
}

// Fail lets the request through as the anonymous consumer when one is
// configured, else answers 401 with body; it returns what Rewrite returns.
func (a *AuthBase) Fail(c *Ctx, body []byte) bool {
	if a.Anonymous != nil {
		c.SetConsumer(a.Anonymous)
		return true
	}
	c.Reply(401, body)
	return false
}
