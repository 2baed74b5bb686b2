package view

import (
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/trajlab/traj/replay/view/lexers"
)

// Highlighting is done here, on the server, by chroma (the lexer library
// behind Hugo and goldmark-highlighting, ~250 languages, maintained; its
// lexers built on first use, see package lexers): the
// page receives lines of [class, text] tokens and builds spans with
// textContent, styled by classes in app.css. No inline style, no HTML
// from the server, nothing fetched: the page stays CSP-strict and offline.

// Token is one highlighted run of text: [chroma's short class, text].
type Token [2]string

// maxHighlightBytes bounds the files that are highlighted; a larger file
// is sent as plain text (lexing is the cost).
const maxHighlightBytes = 512 << 10

// highlight splits text into lines of tokens with the lexer chroma picks
// for name; ok is false when no lexer knows the file or it is too large.
func highlight(name, text string) (lines [][]Token, ok bool) {
	if len(text) > maxHighlightBytes {
		return nil, false
	}
	lx := lexers.Match(name)
	if lx == nil {
		return nil, false
	}
	it, err := chroma.Coalesce(lx).Tokenise(nil, text)
	if err != nil {
		return nil, false
	}
	line := []Token{}
	for _, tok := range it.Tokens() {
		class := chroma.StandardTypes[tok.Type]
		for i, seg := range strings.Split(tok.Value, "\n") {
			if i > 0 {
				lines = append(lines, line)
				line = []Token{}
			}
			if seg != "" {
				line = append(line, Token{class, seg})
			}
		}
	}
	if len(line) > 0 {
		lines = append(lines, line)
	}
	return lines, true
}
