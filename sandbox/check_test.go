package sandbox

import (
	"context"
	"strings"
	"testing"
)

// TestWriteCheck: a container engine that is not there is reported as
// not working, with the reason, and the other providers are still
// checked, in order.
func TestWriteCheck(t *testing.T) {
	var b strings.Builder
	err := WriteCheck(context.Background(), "/nonexistent/podman", &b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "bwrap:     ") || !strings.HasPrefix(lines[1], "container: no: ") ||
		!strings.Contains(lines[1], "/nonexistent/podman") || lines[2] != "local:     works (no isolation; only with --sandbox local)" {
		t.Fatalf("check:\n%s", b.String())
	}
	if err == nil && (len(lines) != 4 || !strings.HasPrefix(lines[3], "default:   ")) {
		t.Errorf("no default named:\n%s", b.String())
	}
}
