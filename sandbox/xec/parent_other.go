//go:build !linux

package xec

import "syscall"

// killWithParent has no portable equivalent of Linux's Pdeathsig; Stop and
// context cancellation remain the way children end.
func killWithParent(*syscall.SysProcAttr) {}
