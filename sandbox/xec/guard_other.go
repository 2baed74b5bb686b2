//go:build !linux

package xec

import (
	"fmt"
	"os"
)

// GuardMain needs Linux (a child subreaper); the sandboxes that use a
// guard (bwrap) exist only there.
func GuardMain([]string) int {
	fmt.Fprintln(os.Stderr, GuardCommand+": needs Linux")
	return 2
}
