package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Secret references in plugin option values and ssl certificates and keys
// are resolved when the snapshot compiles:
//
//	$env://NAME       the environment variable NAME (it must be set)
//	$env://NAME/key   the string member key of NAME's value, a JSON object
//	$secret://<manager>/<id>/<key>
//	                  a secret manager's value: vault, aws and gcp are not
//	                  built in this build (no real server to test them
//	                  against), so such a reference is refused
//
// A reference that does not resolve makes its resource fail to compile: the
// admin API refuses the write with a 400, and a stored one is left out of
// the snapshot (not served) with the error logged. Errors name the
// reference, never a resolved value.

// ErrSecretNotBuilt marks a $secret:// reference to a manager this build
// does not read.
var ErrSecretNotBuilt = errors.New("not built in this build")

// lookupEnv is os.LookupEnv; tests replace it.
var lookupEnv = os.LookupEnv

// ResolveRef resolves v when it is a reference; ok is false (and v
// returned as is) when it is not one.
func ResolveRef(v string) (out string, ok bool, err error) {
	switch {
	case strings.HasPrefix(v, "$env://"):
		ref := v[len("$env://"):]
		name, key, hasKey := strings.Cut(ref, "/")
		if name == "" {
			return "", true, errors.New("reference $env://: no variable name")
		}
		val, set := lookupEnv(name)
		if !set {
			return "", true, fmt.Errorf("reference $env://%s: the environment variable is not set", name)
		}
		if !hasKey {
			return val, true, nil
		}
		var m map[string]any
		if json.Unmarshal([]byte(val), &m) != nil {
			return "", true, fmt.Errorf("reference $env://%s/%s: the variable's value is not a JSON object", name, key)
		}
		s, isStr := m[key].(string)
		if !isStr {
			return "", true, fmt.Errorf("reference $env://%s/%s: no string member %q in the variable's JSON value", name, key, key)
		}
		return s, true, nil
	case strings.HasPrefix(v, "$secret://"):
		manager, _, _ := strings.Cut(v[len("$secret://"):], "/")
		switch manager {
		case "vault", "aws", "gcp":
			return "", true, fmt.Errorf("reference $secret://%s/...: secret manager %s: %w", manager, manager, ErrSecretNotBuilt)
		}
		return "", true, fmt.Errorf("reference $secret://%s/...: unknown secret manager %q (vault, aws or gcp)", manager, manager)
	}
	return v, false, nil
}

// resolvePlugins returns ps with every reference in its option values
// resolved; ps itself is returned when it holds none.
func resolvePlugins(ps Plugins) (Plugins, error) {
	var out Plugins
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		raw := ps[n]
		if !bytes.Contains(raw, []byte(`"$env://`)) && !bytes.Contains(raw, []byte(`"$secret://`)) {
			continue
		}
		r, err := resolveJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", n, err)
		}
		if out == nil {
			out = make(Plugins, len(ps))
			for k, v := range ps {
				out[k] = v
			}
		}
		out[n] = r
	}
	if out == nil {
		return ps, nil
	}
	return out, nil
}

// ResolveConf returns one plugin configuration with its references
// resolved (the admin API checks the plugin's options on that).
func ResolveConf(raw json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(raw, []byte(`"$env://`)) && !bytes.Contains(raw, []byte(`"$secret://`)) {
		return raw, nil
	}
	return resolveJSON(raw)
}

// resolveJSON replaces every string value of raw that is a reference.
func resolveJSON(raw json.RawMessage) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("cannot decode configuration: %w", err)
	}
	v, err := resolveValue(v, "")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func resolveValue(v any, path string) (any, error) {
	switch x := v.(type) {
	case string:
		s, ok, err := ResolveRef(x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.TrimPrefix(path, "."), err)
		}
		if ok {
			return s, nil
		}
		return x, nil
	case map[string]any:
		for k, e := range x {
			r, err := resolveValue(e, path+"."+k)
			if err != nil {
				return nil, err
			}
			x[k] = r
		}
	case []any:
		for i, e := range x {
			r, err := resolveValue(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			x[i] = r
		}
	}
	return v, nil
}
