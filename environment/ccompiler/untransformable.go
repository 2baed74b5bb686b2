package ccompiler

// untransformable lists the runnable cases of the public suites whose
// nonce rewrite (nonce.go) gcc does not pass while it passes the original
// (measured with gcc on the whole public suites, TestNonceKeepsMeaning),
// with why. They run unguarded: their original rule, counted only beside
// a passing guarded case of their suite (guard.go). Keys are case names
// (torture_std's are torture's).
var untransformable = map[string]string{}
