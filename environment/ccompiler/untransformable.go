package ccompiler

// untransformable lists the runnable cases of the public suites whose
// nonce rewrite (nonce.go) gcc does not pass while it passes the original
// (TestNonceKeepsMeaning, with gcc on the whole public suites), with why.
// They run unguarded: their original rule, counted only beside a passing
// guarded case of their suite and no fixed-like one (guard.go). Keys are case names
// (torture_std's are torture's).
//
// Besides these, the rewrite leaves unguarded by rule the cases it cannot
// handle: a bare `return;` in main (torture/920415-1.c) and cases none of
// whose sources defines main (seven wacct cases, which gcc fails as
// written too: helper files of libraries/ folders loaded as cases, and a
// main written in assembly).
var untransformable = map[string]string{
	"c_testsuite/00066.c": "a return of main ends in a macro expanding to the semicolon",
	"torture/extzvsi.c":   "two mains, one chosen by the preprocessor",
	"torture/pr54937.c":   "main leaves through exit called by a function pointer",
}
