//lint:file-ignore ST1001 chroma's lexers are written against its dot import; kept as they are, to compare with them

package lexers

// Adapted from chroma v2.27.0's lexers/go.go (MIT, see COPYING): the Go
// lexer and Go's text template lexer, built into a registry on demand
// instead of registered at init.

import (
	"strings"

	. "github.com/alecthomas/chroma/v2"
)

// goLexers registers Go's lexers into reg; text and html are two parses
// of the go_template.xml definition.
func goLexers(reg *LexerRegistry, text, html *RegexLexer) {
	template := reg.Register(text.SetConfig(&Config{
		Name:    "Go Text Template",
		Aliases: []string{"go-text-template"},
	}))
	reg.Register(DelegatingLexer(reg.Get("HTML"), html.SetConfig(&Config{
		Name:    "Go HTML Template",
		Aliases: []string{"go-html-template"},
	})))
	reg.Register(MustNewLexer(
		&Config{
			Name:      "Go",
			Aliases:   []string{"go", "golang"},
			Filenames: []string{"*.go"},
			MimeTypes: []string{"text/x-gosrc"},
		},
		func() Rules { return goRules(template) },
	).SetAnalyser(func(text string) float32 {
		if strings.Contains(text, "fmt.") && strings.Contains(text, "package ") {
			return 0.5
		}
		if strings.Contains(text, "package ") {
			return 0.1
		}
		return 0.0
	}))
}

func goRules(template Lexer) Rules {
	return Rules{
		"root": {
			r(`\n`, TextWhitespace, nil),
			r(`\s+`, TextWhitespace, nil),
			r(`//[^\s\n\r][^\n\r]*`, CommentPreproc, nil),
			r(`//[^\n\r]*`, CommentSingle, nil),
			r(`/(\\\n)?[*](.|\n)*?[*](\\\n)?/`, CommentMultiline, nil),
			r(`(import|package)\b`, KeywordNamespace, nil),
			r(`(var|func|struct|map|chan|type|interface|const)\b`, KeywordDeclaration, nil),
			r(Words(``, `\b`, `break`, `default`, `select`, `case`, `defer`, `go`, `else`, `goto`, `switch`, `fallthrough`, `if`, `range`, `continue`, `for`, `return`), Keyword, nil),
			r(`(true|false|iota|nil)\b`, KeywordConstant, nil),
			r(Words(``, `\b(\()`, `uint`, `uint8`, `uint16`, `uint32`, `uint64`, `int`, `int8`, `int16`, `int32`, `int64`, `float`, `float32`, `float64`, `complex64`, `complex128`, `byte`, `rune`, `string`, `bool`, `error`, `uintptr`, `print`, `println`, `panic`, `recover`, `close`, `complex`, `real`, `imag`, `len`, `cap`, `append`, `copy`, `delete`, `new`, `make`, `clear`, `min`, `max`), ByGroups(NameBuiltin, Punctuation), nil),
			r(Words(``, `\b`, `uint`, `uint8`, `uint16`, `uint32`, `uint64`, `int`, `int8`, `int16`, `int32`, `int64`, `float`, `float32`, `float64`, `complex64`, `complex128`, `byte`, `rune`, `string`, `bool`, `error`, `uintptr`, `any`), KeywordType, nil),
			r(`\d+i`, LiteralNumber, nil),
			r(`\d+\.\d*([Ee][-+]\d+)?i`, LiteralNumber, nil),
			r(`\.\d+([Ee][-+]\d+)?i`, LiteralNumber, nil),
			r(`\d+[Ee][-+]\d+i`, LiteralNumber, nil),
			r(`\d+(\.\d+[eE][+\-]?\d+|\.\d*|[eE][+\-]?\d+)`, LiteralNumberFloat, nil),
			r(`\.\d+([eE][+\-]?\d+)?`, LiteralNumberFloat, nil),
			r(`0[0-7]+`, LiteralNumberOct, nil),
			r(`0[xX][0-9a-fA-F_]+`, LiteralNumberHex, nil),
			r(`0b[01_]+`, LiteralNumberBin, nil),
			r(`(0|[1-9][0-9_]*)`, LiteralNumberInteger, nil),
			r(`'(\\['"\\abfnrtv]|\\x[0-9a-fA-F]{2}|\\[0-7]{1,3}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|[^\\])'`, LiteralStringChar, nil),
			r("(`)([^`]*)(`)", ByGroups(LiteralString, UsingLexer(TypeRemappingLexer(template, TypeMapping{{Other, LiteralString, nil}})), LiteralString), nil),
			r(`"(\\\\|\\"|[^"])*"`, LiteralString, nil),
			r(`(<<=|>>=|<<|>>|<=|>=|&\^=|&\^|\+=|-=|\*=|/=|%=|&=|\|=|&&|\|\||<-|\+\+|--|==|!=|:=|\.\.\.|[+\-*/%&])`, Operator, nil),
			r(`([a-zA-Z_]\w*)(\s*)(\()`, ByGroups(NameFunction, UsingSelf("root"), Punctuation), nil),
			r(`[|^<>=!()\[\]{}.,;:~]`, Punctuation, nil),
			r(`[^\W\d]\w*`, NameOther, nil),
		},
	}
}

// r is a rule (keyed: chroma's own lexers list them unkeyed).
func r(pattern string, typ Emitter, mutator Mutator) Rule {
	return Rule{Pattern: pattern, Type: typ, Mutator: mutator}
}
