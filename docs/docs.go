// Package docs embeds the configuration reference, whose field tables are
// the descriptions of the resource file's JSON Schema (package schema).
package docs

import _ "embed"

// ConfigMD is docs/CONFIG.md.
//
//go:embed CONFIG.md
var ConfigMD string
