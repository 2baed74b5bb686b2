// Package scripted is an OpenAI-compatible model server that plays back a
// script of assistant responses, so OpenCode runs offline, deterministically,
// in tests and in the demo.
package scripted
