//lint:file-ignore ST1001 chroma's lexers are written against its dot import; kept as they are, to compare with them

package lexers

// Adapted from chroma v2.27.0's lexers/markdown.go (MIT, see COPYING):
// the Markdown lexer with YAML frontmatter, built into a registry on
// demand instead of registered at init.

import (
	"strings"

	. "github.com/alecthomas/chroma/v2"
)

// markdownLexer registers the Markdown lexer into reg.
func markdownLexer(reg *LexerRegistry) {
	reg.Register(&markdown{Lexer: MustNewLexer(
		&Config{
			Name:      "markdown",
			Aliases:   []string{"md", "mkd"},
			Filenames: []string{"*.md", "*.mkd", "*.markdown"},
			MimeTypes: []string{"text/x-markdown"},
		},
		markdownRules,
	), reg: reg})
}

// markdown wraps the base Markdown lexer to highlight top-of-file YAML
// frontmatter.
type markdown struct {
	Lexer
	reg *LexerRegistry
}

// Tokenise lexes Markdown, highlighting a leading YAML frontmatter block
// before delegating to Markdown rules.
func (m *markdown) Tokenise(options *TokeniseOptions, text string) (Iterator, error) {
	frontmatter, rest, ok := splitFrontmatter(text)
	if !ok {
		return m.Lexer.Tokenise(options, text)
	}

	yamlLexer := m.reg.Get("YAML")
	if yamlLexer == nil {
		return m.Lexer.Tokenise(options, text)
	}

	yamlTokens, err := yamlLexer.Tokenise(options, frontmatter)
	if err != nil {
		return nil, err
	}
	markdownTokens, err := m.Lexer.Tokenise(options, rest)
	if err != nil {
		return nil, err
	}
	return Concaterator(yamlTokens, markdownTokens), nil
}

// Extracts a leading YAML frontmatter block if the document starts with one.
func splitFrontmatter(text string) (frontmatter string, rest string, ok bool) {
	if !strings.HasPrefix(text, "---\n") && !strings.HasPrefix(text, "---\r\n") {
		return "", text, false
	}

	lineEnd := strings.IndexByte(text, '\n')
	if lineEnd < 0 {
		return "", text, false
	}
	if strings.TrimSuffix(text[:lineEnd], "\r") != "---" {
		return "", text, false
	}

	for pos := lineEnd + 1; pos < len(text); {
		next := strings.IndexByte(text[pos:], '\n')
		if next < 0 {
			break
		}
		lineEnd = pos + next
		line := strings.TrimSuffix(text[pos:lineEnd], "\r")
		if line == "---" {
			return text[:lineEnd+1], text[lineEnd+1:], true
		}
		pos = lineEnd + 1
	}
	return "", text, false
}

func markdownRules() Rules {
	return Rules{
		"root": {
			r(`<!--[\w\W]*?-->`, CommentMultiline, nil),
			r(`^(#[^#].+\n)`, ByGroups(GenericHeading), nil),
			r(`^(#{2,6}.+\n)`, ByGroups(GenericSubheading), nil),
			r(`^(\s*)([*-] )(\[[ xX]\])( .+\n)`, ByGroups(Text, Keyword, Keyword, UsingSelf("inline")), nil),
			r(`^(\s*)([*-])(\s)(.+\n)`, ByGroups(Text, Keyword, Text, UsingSelf("inline")), nil),
			r(`^(\s*)([0-9]+\.)( .+\n)`, ByGroups(Text, Keyword, UsingSelf("inline")), nil),
			r(`^(\s*>\s)(.+\n)`, ByGroups(Keyword, GenericEmph), nil),
			r("^(```\\n)([\\w\\W]*?)(^```$)", ByGroups(String, Text, String), nil),
			r("^(```)(\\w+)(\\n)([\\w\\W]*?)(^```$)", UsingByGroup(2, 4, String, String, String, Text, String), nil),
			Include("inline"),
		},
		"inline": {
			r(`<!--[\w\W]*?-->`, CommentMultiline, nil),
			r(`\\.`, Text, nil),
			r(`(\s)(\*|_)((?:(?!\2).)*)(\2)((?=\W|\n))`, ByGroups(Text, GenericEmph, GenericEmph, GenericEmph, Text), nil),
			r(`(\s)((\*\*|__).*?)\3((?=\W|\n))`, ByGroups(Text, GenericStrong, GenericStrong, Text), nil),
			r(`(\s)(~~[^~]+~~)((?=\W|\n))`, ByGroups(Text, GenericDeleted, Text), nil),
			r("`[^`]+`", LiteralStringBacktick, nil),
			r(`[@#][\w/:]+`, NameEntity, nil),
			r(`(!?\[)([^]]+)(\])(\()([^)]+)(\))`, ByGroups(Text, NameTag, Text, Text, NameAttribute, Text), nil),
			r(`.|\n`, Text, nil),
		},
	}
}
