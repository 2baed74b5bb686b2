package record

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestRecoveryRefuses: sync and finalize of a trajectory this machine did
// not record, or of a reference that is no trajectory id, are a
// BadRequest (the commands exit 2) and print nothing.
func TestRecoveryRefuses(t *testing.T) {
	work := t.TempDir()
	for name, handler := range map[string]func(context.Context, Located) error{"sync": Sync, "finalize": Finalize} {
		for _, ref := range []string{"nope", "../x", ""} {
			var out bytes.Buffer
			err := handler(context.Background(), Located{Ref: ref, WorkDir: work, Store: work, Stdout: &out})
			if bad := (*BadRequest)(nil); !errors.As(err, &bad) {
				t.Errorf("%s %q: %v, want a BadRequest", name, ref, err)
			}
			if out.Len() != 0 {
				t.Errorf("%s %q printed %q", name, ref, out.String())
			}
		}
	}
}
