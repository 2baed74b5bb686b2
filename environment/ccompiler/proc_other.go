//go:build !linux

package ccompiler

import "syscall"

// killWithParent: only Linux has a parent-death signal; elsewhere the
// process group is killed when the case ends or its context is cancelled.
func killWithParent(*syscall.SysProcAttr) {}
