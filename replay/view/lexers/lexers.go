// Package lexers is chroma's lexer set, built on first use. chroma's own
// lexers package parses its 279 XML definitions at package init, which
// every traj command would pay (20–30 ms of each process's start, most
// of a cached evaluate) although only the viewer highlights. Here the
// same definitions (chroma's, packed from the version go.mod requires:
// definitions.tar.zst, go generate) and chroma's two Go-coded lexers a
// coding agent's workspace needs most, Go and Markdown, are built into a
// registry the first time a file is matched. chroma's other Go-coded
// lexers (reStructuredText, HTTP, Svelte, Raku and a few rarer ones) are
// not included: those files are shown as plain text.
package lexers

//go:generate go run ./internal/pack

import (
	"archive/tar"
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"sync"

	"github.com/alecthomas/chroma/v2"
	"github.com/klauspost/compress/zstd"
)

//go:embed definitions.tar.zst
var packed []byte

// registry is built once, on first use, and only read afterwards.
var registry = sync.OnceValues(build)

// Match returns the lexer for filename, nil when none knows it.
func Match(filename string) chroma.Lexer {
	reg, err := registry()
	if err != nil {
		return nil
	}
	return reg.Match(filename)
}

// Registry returns the whole set (its tests compare it with chroma's).
func Registry() (*chroma.LexerRegistry, error) { return registry() }

// build parses every packed definition into a new registry, then adds
// the Go-coded lexers (Go's refers to HTML, Markdown's to YAML, both
// definitions).
func build() (*chroma.LexerRegistry, error) {
	zr, err := zstd.NewReader(bytes.NewReader(packed), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("lexer definitions: %w", err)
	}
	defer zr.Close()
	reg := chroma.NewLexerRegistry()
	var goTemplate []byte
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("lexer definitions: %w", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("lexer definition %s: %w", h.Name, err)
		}
		if h.Name == "go_template.xml" {
			// Also the base of Go's two template lexers, as in chroma.
			goTemplate = data
		}
		lx, err := chroma.Unmarshal(data)
		if err != nil {
			return nil, fmt.Errorf("lexer definition %s: %w", h.Name, err)
		}
		reg.Register(lx)
	}
	if goTemplate == nil {
		return nil, fmt.Errorf("lexer definitions: no go_template.xml")
	}
	var tmpl [2]*chroma.RegexLexer
	for i := range tmpl {
		if tmpl[i], err = chroma.Unmarshal(goTemplate); err != nil {
			return nil, fmt.Errorf("lexer definition go_template.xml: %w", err)
		}
	}
	goLexers(reg, tmpl[0], tmpl[1])
	markdownLexer(reg)
	return reg, nil
}
