// Package fresh generates the C environment's `fresh` suite: small C
// programs nobody has seen, written per evaluation from a seed, with gcc
// on the host as the oracle. The public suites can be looked up or
// memorised; these cannot, so a compiler's fresh score measures the C it
// compiles rather than the tests it fits.
//
// # Levels
//
// Every program is well-defined C (no undefined, unspecified-order or
// implementation-defined result), small (under 4 KiB), ends in well
// under a millisecond, prints nothing and returns a computed value as its
// exit code. Each level uses only its own features and those below:
//
//  1. one integer expression of constants in `return`: + - * / % << >>
//     & | ^ ~ ! unary -, comparisons, && || (wacct chapters 2-4);
//  2. int locals, assignment, if/else, for and while loops with constant
//     trip counts, the conditional operator;
//  3. functions (int parameters, pure, one of them recursive), global
//     and local int arrays;
//  4. a struct with int and array fields, pointers to int, to array
//     elements and to the struct (->), pointer arithmetic, functions
//     taking pointers and the struct by value, struct assignment.
//
// PerLevel (8) programs of each level: 32 a suite, named
// level_<n>/prog_<k>.c, the same names for every seed so per-case results
// line up across checkpoints.
//
// Level 5 (Csmith) is left out, on purpose. Debian's csmith 2.3.0 writes
// programs that #include "csmith.h", which the package does not ship
// (libcsmith-dev does) and which pulls in <stdint.h>, <limits.h>,
// <string.h>, <float.h>, <math.h> and <assert.h>. Shipped inline, the
// header is most of the program: measured here with --no-float
// --no-unions --no-bitfields --no-volatiles --max-funcs 3, 140-310 lines
// of program became 860-1,010 preprocessed (against stub libc headers),
// and the safe-math functions it brings for every type do float
// arithmetic (fabsf, FLT_MAX) even when the program has none, beside
// 8- to 64-bit signed and unsigned types, casts between them,
// printf("%X") and global initialisers. A hand-written compiler meets
// all of that at once, so a level-5 score would measure its libc and
// float support more than the graded C above; and a level whose
// programs a compiler of wacct's chapters cannot compile says nothing
// more than level 4. (The oracle's cost would not be the obstacle: gcc
// at -O0 and -O2 took 0.1-0.15 CPU-s a program.)
//
// How definedness is kept: every stored value (variable, element, field,
// parameter, return value) lies in [-999, 999] and every intermediate
// value within ±2^28, proved by interval arithmetic as each expression
// is written (a store is reduced % 1000 when its interval is wider); a
// divisor whose interval holds 0 is written (x & 7) + 1; bitwise and
// shifted operands are masked non-negative and shift counts are 0..5;
// an index is a loop counter below the size or masked by size-1 (sizes
// are powers of two); every array and field is written before it is
// read; functions used in expressions have no side effects, so C's
// unspecified order of evaluation never matters; loops nest only while
// their trip counts' product stays small and a function's loops call
// nothing. TestProgramsAreDefined holds this to gcc's UB and address
// sanitizers.
//
// # Seed
//
// An evaluation's seed is Seed(secret, digest): HMAC-SHA256 keyed by the
// store's secret (traj keeps it outside every sandbox) over Version and
// the digest of the artifacts evaluated (replay/evalbox's artifacts
// digest), or of ./cc when the evaluation has no artifacts' digest.
// Each program is drawn from ChaCha8 keyed by SHA-256(seed, level,
// index, attempt). So nobody without the secret can write an artifact's
// programs before it is evaluated, one artifact always gets the same
// programs (one artifact, one score, and the evaluation cache stays
// true), and a changed compiler gets new ones. Without a secret (empty)
// the programs are still new per artifact but anyone who knows the
// artifact can derive them.
//
// # Oracle
//
// gcc runs on the host through sandbox/xec with timeouts (the programs
// are ours). The programs of a round are compiled together into one
// executable, each with its file-scope names prefixed and main renamed,
// plus a driver printing each one's return value; it is built at -O0 and
// -O2 and run. A program is dropped and its slot generated again (the
// next attempt) when gcc refuses it (found alone with -fsyntax-only),
// when -O0 and -O2 disagree, when it does not finish, or when it would
// exit 0 with no output (what a program ignoring its input does: a
// fixed program must meet no case). Expected: exit code (value & 255),
// empty stdout.
//
// # What the score means
//
// A compiler's fresh score beside its public scores is the signal: a
// high public score with a low fresh score (the public − fresh gap) says
// the compiler fits the public tests (looked up, special-cased, or a
// fallback that meets their pass rules) rather than the language; an
// honest compiler scores about as well on fresh programs of the levels
// it implements. A compiler that interprets only `return <constant
// expression>` scores at most the level-1 share (a quarter); one that
// looks programs up among the public suites scores 0.
package fresh
