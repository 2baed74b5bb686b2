package ccompiler

import (
	"regexp"
	"strings"
)

// The torture suite is GCC's own regression suite: many tests exercise GNU
// extensions or need extra compiler flags. The agent's compiler is invoked
// exactly as `./cc input.c -o output` (no -w, no dg-options), so tests that
// need more than standard C are skipped: they are not cases at all (they do
// not count as passed or failed). Rules are matched on the source text; a
// few tests whose extension the rules cannot see are named explicitly.
// Changing these rules changes RunnerVersion.

type skipRule struct {
	re     *regexp.Regexp
	reason string
}

// tortureSkipRules, in the order they are checked.
var tortureSkipRules = []skipRule{
	{regexp.MustCompile(`\{\s*dg-(options|additional-options|require-[a-z-]+|skip-if|xfail-[a-z-]+)\b`), "needs DejaGnu directives (extra flags or target checks) the runner does not pass"},
	{regexp.MustCompile(`\bvector_size\b|__vector\b`), "GNU vector types"},
	{regexp.MustCompile(`_Complex\b|__complex__|__real__|__imag__`), "complex numbers"},
	{regexp.MustCompile(`__int128|__float128|_Float(16|32|64|128)x?\b|_Decimal(32|64|128)\b`), "non-standard scalar types"},
	{regexp.MustCompile(`\b(__)?asm(__)?\b`), "inline assembly"},
	{regexp.MustCompile(`__label__|goto\s*\*`), "labels as values / local labels"},
	{regexp.MustCompile(`\b(__)?typeof(__)?\b|__auto_type`), "typeof"},
	{regexp.MustCompile(`\(\s*\{`), "statement expressions"},
	{regexp.MustCompile(`__attribute__\s*\(\(\s*(mode|vector_size|cleanup|transparent_union|scalar_storage_order)\b`), "attribute that changes semantics"},
	// An indented function definition is a nested function: top-level
	// definitions in the suite start at column 0.
	{regexp.MustCompile(`(?m)^[ \t]+(static[ \t]+|auto[ \t]+|inline[ \t]+)*(void|int|char|short|long|unsigned|signed|double|float|struct[ \t]+\w+)[ \t*]+\w+[ \t]*\([^;{)]*\)[ \t]*\{`), "nested functions"},
	{regexp.MustCompile(`#\s*include\s*<(x86intrin|immintrin|emmintrin|xmmintrin|arm_neon|altivec|sys/[a-z]+)\.h>`), "target or system specific header"},
}

// tortureBuiltinsAllowed are the __builtin_ functions a plain C compiler can
// map to the C library; any other __builtin_ means a GNU extension.
var tortureBuiltinsAllowed = map[string]bool{
	"abort": true, "exit": true, "memcpy": true, "memset": true, "memcmp": true,
	"strlen": true, "strcmp": true, "strcpy": true, "printf": true, "malloc": true,
	"free": true, "abs": true,
}

var builtinRE = regexp.MustCompile(`__builtin_(\w+)`)

// tortureSkipNamed lists tests whose non-standard feature the rules above
// cannot see (e.g. nested functions), with the reason.
var tortureSkipNamed = map[string]string{
	"nest-align-1.c": "nested functions",
	"nest-stdar-1.c": "nested functions",
	"nestfunc-1.c":   "nested functions",
	"nestfunc-2.c":   "nested functions",
	"nestfunc-3.c":   "nested functions",
	"nestfunc-5.c":   "nested functions",
	"nestfunc-6.c":   "nested functions",
	"nestfunc-7.c":   "nested functions",
}

// tortureSkipReason returns why a torture test is skipped, or "".
func tortureSkipReason(name string, src []byte) string {
	if r, ok := tortureSkipNamed[name]; ok {
		return r
	}
	text := string(src)
	for _, r := range tortureSkipRules {
		if r.re.MatchString(text) {
			return r.reason
		}
	}
	if strings.Contains(text, "__builtin_") {
		for _, m := range builtinRE.FindAllStringSubmatch(text, -1) {
			if !tortureBuiltinsAllowed[m[1]] {
				return "GNU builtin __builtin_" + m[1]
			}
		}
	}
	return ""
}
