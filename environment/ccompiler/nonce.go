package ccompiler

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
)

// The per-case nonce. Several pass rules can be met by a program that
// does nothing (torture's "exit 0", c-testsuite's "exit 0 and this
// output", wacct's invalid programs' "any refusal"), so the evaluator
// (trusted, on the host) rewrites every runnable case it can, uniformly,
// so that its correct compilation exits with (E+K) mod 256, where E is the
// case's expected exit code and K a nonce derived from the store's secret
// and the case's name (nonceFor). K is chosen so that code is neither 0
// nor E: neither the do-nothing program nor the untransformed case's
// behaviour meets it. The rewrite keeps the case's meaning: it touches
// only how main's result leaves the program.
//
//   - inside main's body (not a nested function's), `return X;` becomes
//     `return (X) + K;`, or, when X is a plain integer literal, the literal
//     (X+K) mod 256, so a compiler of wacct's chapter 1 needs no new
//     feature;
//   - every call `exit (X)` in the case's sources becomes `exit ((X) + K)`
//     (folded the same way);
//   - when main's last statement is not a return, `return K;` is added
//     before its closing brace (falling off main returns 0).
//
// Comments, string and character literals and preprocessor lines are
// never touched. A case the rewrite cannot handle (no main among its
// sources, a bare `return;` in main) or whose rewrite gcc does not pass
// while it passes the original (untransformable, listed in
// untransformable.go) keeps its original rule and is marked unguarded.

// nonceFor is K for the case named name (suite/…): 1..255 with
// (expect+K) mod 256 neither 0 nor expect, from HMAC-SHA256(secret, name).
func nonceFor(secret []byte, name string, expect int) int {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(name))
	sum := mac.Sum(nil)
	for {
		for _, b := range sum {
			k := int(b)
			if k != 0 && (expect+k)%256 != 0 {
				return k
			}
		}
		mac.Reset()
		mac.Write(sum)
		sum = mac.Sum(nil)
	}
}

// token is one lexical token of a C source: its byte span and kind.
type token struct {
	start, end int
	kind       byte // 'i' identifier or keyword, 'n' number, 'p' punctuator
}

// lexC splits src into the tokens the rewrite looks at, skipping
// comments, string and character literals (kept as opaque 'p' tokens so
// they separate what they separate) and preprocessor lines.
func lexC(src []byte) []token {
	var toks []token
	lineStart := true // only blanks since the last newline
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			lineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
			continue
		case c == '#' && lineStart:
			// A preprocessor line, with its continuations and comments.
			for i < len(src) && src[i] != '\n' {
				switch {
				case src[i] == '\\' && i+1 < len(src) && src[i+1] == '\n':
					i += 2
				case src[i] == '/' && i+1 < len(src) && src[i+1] == '*':
					i = skipBlockComment(src, i)
				default:
					i++
				}
			}
			continue
		}
		lineStart = false
		switch {
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i = skipBlockComment(src, i)
		case c == '"' || c == '\'':
			j := literalEnd(src, i)
			toks = append(toks, token{i, j, 's'})
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && (isIdentStart(src[j]) || isDigit(src[j])) {
				j++
			}
			// A prefixed literal (L"…", u8'…') is one token, prefix included.
			if j < len(src) && (src[j] == '"' || src[j] == '\'') && isLiteralPrefix(string(src[i:j])) {
				end := literalEnd(src, j)
				toks = append(toks, token{i, end, 's'})
				i = end
				continue
			}
			toks = append(toks, token{i, j, 'i'})
			i = j
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j := i + 1
			for j < len(src) && (isIdentStart(src[j]) || isDigit(src[j]) || src[j] == '.' ||
				((src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E' || src[j-1] == 'p' || src[j-1] == 'P'))) {
				j++
			}
			toks = append(toks, token{i, j, 'n'})
			i = j
		default:
			j := i + 1
			// Two-character punctuators that matter here: -> (not a call
			// of exit) and the rest kept whole so `a->exit(0)` is seen.
			if j < len(src) && (c == '-' && src[j] == '>') {
				j++
			}
			toks = append(toks, token{i, j, 'p'})
			i = j
		}
	}
	return toks
}

// literalEnd is the end of the string or character literal opening at i.
func literalEnd(src []byte, i int) int {
	q := src[i]
	j := i + 1
	for j < len(src) && src[j] != q && src[j] != '\n' {
		if src[j] == '\\' {
			j++
		}
		j++
	}
	return min(j+1, len(src))
}

func skipBlockComment(src []byte, i int) int {
	for j := i + 2; j+1 < len(src); j++ {
		if src[j] == '*' && src[j+1] == '/' {
			return j + 2
		}
	}
	return len(src)
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isLiteralPrefix(s string) bool {
	return s == "L" || s == "u" || s == "U" || s == "u8"
}

// controlWords precede a parenthesis and a brace without declaring a
// function.
var controlWords = map[string]bool{"if": true, "while": true, "for": true, "switch": true, "return": true,
	"sizeof": true, "__attribute__": true, "__typeof__": true, "typeof": true, "_Alignof": true}

// krTypes start a K&R parameter declaration (between main's `)` and its
// body).
var krTypes = map[string]bool{"int": true, "char": true, "long": true, "short": true, "unsigned": true, "signed": true,
	"float": true, "double": true, "struct": true, "union": true, "enum": true, "register": true, "const": true, "void": true}

// plainInt is the value of a plain decimal, octal or hex integer literal
// (suffixes u, l allowed) and whether s is one.
func plainInt(s string) (int64, bool) {
	s = strings.TrimRight(s, "uUlL")
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil || (len(s) > 1 && s[0] == '0' && s[1] != 'x' && s[1] != 'X' && strings.ContainsAny(s, "89")) {
		return 0, false
	}
	return v, true
}

// edit replaces src[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// withNonce rewrites one source (see the comment above nonceFor) and
// reports whether it defines main. k is the nonce.
func withNonce(src []byte, k int) (out []byte, hasMain bool, err error) {
	toks := lexC(src)
	text := func(i int) string { return string(src[toks[i].start:toks[i].end]) }
	is := func(i int, s string) bool { return i >= 0 && i < len(toks) && text(i) == s }
	// match returns the index of the token closing the bracket at i.
	match := func(i int) int {
		open, close := text(i), map[string]string{"(": ")", "{": "}", "[": "]"}[text(i)]
		depth := 0
		for j := i; j < len(toks); j++ {
			switch text(j) {
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					return j
				}
			}
		}
		return -1
	}
	value := func(from, to int) string { // the expression tokens [from, to) as written, folded
		if to == from+1 && toks[from].kind == 'n' {
			if v, ok := plainInt(text(from)); ok {
				return strconv.FormatInt((v+int64(k))&0xff, 10)
			}
		}
		if to <= from {
			return ""
		}
		return fmt.Sprintf("(%s) + %d", src[toks[from].start:toks[to-1].end], k)
	}
	var edits []edit

	// main's body: `main ( … )` at file level, then a `{` before any `;`.
	bodyOpen, bodyClose := -1, -1
	depth := 0
	for i := 0; i < len(toks); i++ {
		switch text(i) {
		case "{":
			depth++
		case "}":
			depth--
		}
		if depth != 0 || toks[i].kind != 'i' || text(i) != "main" || !is(i+1, "(") || is(i-1, ".") || is(i-1, "->") {
			continue
		}
		rp := match(i + 1)
		if rp < 0 {
			break
		}
		j := rp + 1
		if j < len(toks) && krTypes[text(j)] {
			// K&R parameter declarations, up to the body.
			for j < len(toks) && !is(j, "{") {
				j++
			}
		}
		if is(j, "{") {
			bodyOpen, bodyClose = j, match(j)
			break
		}
	}
	hasMain = bodyOpen >= 0 && bodyClose > bodyOpen

	// Nested function bodies inside main (a GNU extension torture uses):
	// their returns are theirs.
	nested := map[int]int{} // '{' index -> its '}'
	if hasMain {
		for j := bodyOpen + 1; j < bodyClose; j++ {
			if !is(j, "{") || !is(j-1, ")") {
				continue
			}
			// Find the '(' of that ')', and the word before it.
			d := 0
			p := j - 1
			for ; p > bodyOpen; p-- {
				if is(p, ")") {
					d++
				} else if is(p, "(") {
					d--
					if d == 0 {
						break
					}
				}
			}
			if p > bodyOpen && toks[p-1].kind == 'i' && !controlWords[text(p-1)] {
				nested[j] = match(j)
			}
		}
	}
	inNested := func(i int) bool {
		for o, c := range nested {
			if i > o && i < c {
				return true
			}
		}
		return false
	}

	if hasMain {
		// Returns of main, and whether its last statement is one.
		lastIsReturn := false
		level := 0
		stmtStart := true
		for j := bodyOpen + 1; j < bodyClose; j++ {
			switch text(j) {
			case "{":
				level++
				stmtStart = true
				continue
			case "}":
				level--
				stmtStart = true
				if level == 0 {
					lastIsReturn = false
				}
				continue
			case ";":
				stmtStart = true
				continue
			}
			if level == 0 && stmtStart {
				lastIsReturn = text(j) == "return"
			}
			stmtStart = false
			if text(j) != "return" || inNested(j) {
				continue
			}
			// The expression runs to the ';' at its own bracket level.
			e, d := j+1, 0
		expr:
			for ; e < bodyClose; e++ {
				switch text(e) {
				case "(", "[", "{":
					d++
				case ")", "]", "}":
					d--
				case ";":
					if d == 0 {
						break expr
					}
				}
			}
			if e >= bodyClose || e == j+1 {
				return nil, true, fmt.Errorf("main has a return without a value")
			}
			edits = append(edits, edit{toks[j+1].start, toks[e-1].end, value(j+1, e)})
			j = e - 1
		}
		if !lastIsReturn {
			edits = append(edits, edit{toks[bodyClose].start, toks[bodyClose].start, fmt.Sprintf("return %d;\n", k)})
		}
	}

	// Calls of exit, anywhere (not declarations, not members).
	for i := range toks {
		if text(i) != "exit" || !is(i+1, "(") || is(i-1, ".") || is(i-1, "->") || is(i-1, "*") {
			continue
		}
		if i > 0 && toks[i-1].kind == 'i' && text(i-1) != "else" && text(i-1) != "do" && text(i-1) != "return" {
			continue // a declaration: void exit (int)
		}
		rp := match(i + 1)
		if rp < 0 || rp == i+2 {
			continue
		}
		if hasMain && inside(edits, toks[i].start) {
			continue // already within a rewritten return of main
		}
		edits = append(edits, edit{toks[i+2].start, toks[rp-1].end, value(i+2, rp)})
	}
	if len(edits) == 0 && !hasMain {
		return src, false, nil
	}
	return apply(src, edits), hasMain, nil
}

// inside reports whether pos falls within an edit's span.
func inside(edits []edit, pos int) bool {
	for _, e := range edits {
		if pos >= e.start && pos < e.end {
			return true
		}
	}
	return false
}

// apply makes the edits (non-overlapping, any order) to src.
func apply(src []byte, edits []edit) []byte {
	// Insertion sort by start: a handful of edits per source.
	for i := 1; i < len(edits); i++ {
		for j := i; j > 0 && edits[j].start < edits[j-1].start; j-- {
			edits[j], edits[j-1] = edits[j-1], edits[j]
		}
	}
	var b strings.Builder
	at := 0
	for _, e := range edits {
		if e.start < at {
			continue
		}
		b.Write(src[at:e.start])
		b.WriteString(e.text)
		at = e.end
	}
	b.Write(src[at:])
	return []byte(b.String())
}
