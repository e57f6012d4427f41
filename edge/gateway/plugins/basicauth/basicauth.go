// Package basicauth is the basic-auth plugin: a consumer is identified by
// the user name and password of an `Authorization: Basic` header, matched
// against the basic-auth credentials of consumers.
package basicauth

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
)

// Name and Priority are APISIX's.
const (
	Name     = "basic-auth"
	Priority = 2520
)

func init() {
	plugin.Register(&plugin.Def{Name: Name, Priority: Priority, Auth: true, New: New})
}

var (
	bodyMissing = plugin.ErrorBody("Missing authorization in request")
	bodyInvalid = plugin.ErrorBody("Invalid authorization in request")
	bodyBadUser = plugin.ErrorBody("Invalid user authorization")
)

type conf struct {
	HideCredentials bool   `json:"hide_credentials"`
	Anonymous       string `json:"anonymous_consumer"`
}

type user struct {
	consumer *admingw.Consumer
	password []byte
}

type basicAuth struct {
	plugin.AuthBase
	hide  bool
	users map[string]user
}

// New compiles a basic-auth configuration.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	var c conf
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("cannot decode: %w", err)
	}
	users, err := plugin.CredentialIndex(env, Name, credential)
	if err != nil {
		return nil, err
	}
	p := &basicAuth{hide: c.HideCredentials, users: users}
	if err := p.SetAnonymous(env, c.Anonymous); err != nil {
		return nil, err
	}
	return p, nil
}

// credential compiles one basic-auth user: its consumer and password.
func credential(_ string, con *admingw.Consumer, conf json.RawMessage) (user, bool) {
	var cred struct {
		Password string `json:"password"`
	}
	_ = json.Unmarshal(conf, &cred)
	return user{consumer: con, password: []byte(cred.Password)}, true
}

func (p *basicAuth) Phases() plugin.Phase { return plugin.Rewrite }

func (p *basicAuth) Rewrite(c *plugin.Ctx) bool {
	h := c.R.Request.Header.Peek("Authorization")
	if len(h) == 0 {
		return p.Fail(c, bodyMissing)
	}
	var username, password []byte
	var err error
	username, password, c.Buf, err = ParseHeader(h, c.Buf[:0])
	if err != nil {
		return p.Fail(c, bodyInvalid)
	}
	u, ok := p.users[string(username)]
	// An empty stored or sent password never authenticates.
	if !ok || len(password) == 0 || len(u.password) == 0 || subtle.ConstantTimeCompare(password, u.password) != 1 {
		return p.Fail(c, bodyBadUser)
	}
	c.SetConsumer(u.consumer)
	if p.hide {
		c.R.Request.Header.Del("Authorization")
	}
	return true
}

var (
	errScheme = errors.New("cannot parse authorization: not Basic")
	errBase64 = errors.New("cannot parse authorization: bad base64")
	errColon  = errors.New("cannot parse authorization: no colon")
)

// strictBase64 refuses non-zero padding bits, so each credential has exactly
// one encoding ("Ok1=" is not another spelling of "Ok0=").
var strictBase64 = base64.StdEncoding.Strict()

// ParseHeader splits an `Authorization: Basic <base64(user:password)>`
// value; the password is everything after the first colon. The decoded
// bytes are written into buf (returned grown) and the results point into
// it.
func ParseHeader(h, buf []byte) (username, password, out []byte, err error) {
	const scheme = "basic "
	if len(h) < len(scheme) {
		return nil, nil, buf, errScheme
	}
	for i := 0; i < len(scheme); i++ {
		if h[i]|0x20 != scheme[i] {
			return nil, nil, buf, errScheme
		}
	}
	enc := h[len(scheme):]
	for len(enc) > 0 && enc[0] == ' ' {
		enc = enc[1:]
	}
	// The decoder skips CR and LF; a credential holding them is malformed,
	// not a second spelling of the same one.
	if bytes.IndexByte(enc, '\r') >= 0 || bytes.IndexByte(enc, '\n') >= 0 {
		return nil, nil, buf[:0], errBase64
	}
	n := base64.StdEncoding.DecodedLen(len(enc))
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	buf = buf[:n]
	m, derr := strictBase64.Decode(buf, enc)
	if derr != nil {
		return nil, nil, buf[:0], errBase64
	}
	buf = buf[:m]
	for i, b := range buf {
		if b == ':' {
			return buf[:i], buf[i+1:], buf, nil
		}
	}
	return nil, nil, buf, errColon
}
