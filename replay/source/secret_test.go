package source_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace/store/local"
)

// The evaluation secret is made once per store: every reader, racing or
// later, gets the same bytes; another store gets other bytes.
func TestEvalSecretOncePerStore(t *testing.T) {
	ctx := context.Background()
	open := func() *local.Store {
		st, err := local.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	got := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			s, err := source.EvalSecret(ctx, st)
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		})
	}
	wg.Wait()
	later, err := source.EvalSecret(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(later) != 32 {
		t.Fatalf("secret of %d bytes", len(later))
	}
	for i, s := range got {
		if !bytes.Equal(s, later) {
			t.Errorf("reader %d got another secret", i)
		}
	}
	other, err := source.EvalSecret(ctx, open())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other, later) {
		t.Error("two stores share a secret")
	}
}
