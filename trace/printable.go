package trace

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s safe to print on a terminal. Every string in a trace
// is agent-controlled, and a raw ESC, carriage return or bidirectional
// override in one could rewrite or hide what `traj` prints (clear the
// screen, fake a line, set the window title). Control characters (C0, DEL,
// C1), format characters such as U+202E, line and paragraph separators and
// invalid UTF-8 become Go escapes (\x1b, \n, \u202e); everything else,
// including non-ASCII letters, is kept as it is.
func Printable(s string) string {
	clean := true
	for i, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			_, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size == 1 {
				clean = false
				break
			}
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '\\':
			b.WriteString(`\\`)
		case unsafeRune(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune is a rune a terminal may act on instead of showing.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// ShellWord returns s as one word a POSIX shell reads back as s: as it is
// when it holds only characters no shell treats specially (letters,
// digits, / . - _ : = , @ +), else in single quotes. Every command traj
// prints for a user to paste (continue, sync, finalize) quotes each
// argument with it: a store URL holds & and ?, an id may hold ; or $.
func ShellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '=' || r == ',' || r == '@' || r == '+' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
