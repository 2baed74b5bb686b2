package folder

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/store/upload"
)

// savedBytes is a local store that counts the bytes every Save sends.
type savedBytes struct {
	store.Store
	mu sync.Mutex
	n  int64
}

func (s *savedBytes) Save(ctx context.Context, key string, src store.Source) error {
	if _, size, err := src.Open(); err == nil {
		s.mu.Lock()
		s.n += size
		s.mu.Unlock()
	}
	return s.Store.Save(ctx, key, src)
}

// TestTurnEndUploadsNewRecords: each turn end uploads what the call
// records gained since the last (complete lines only): the bytes the
// store is sent per turn end are the turn's, never the whole growing
// record again; a reader of the store puts the record back together
// while the whole object is absent.
func TestTurnEndUploadsNewRecords(t *testing.T) {
	ctx := context.Background()
	ls, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &savedBytes{Store: ls}
	up := upload.New(ctx, st, upload.Options{})
	defer up.Close(ctx)
	dir := t.TempDir()
	pub := NewHistoryPublisher("live", dir, nil, up, "", nil)
	calls := filepath.Join(dir, store.ModelCallsName)
	f, err := os.Create(calls)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The bytes sent to the store so far.
	stored := func() int64 {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.n
	}
	var written, before int64
	seq := 0
	for turn := 1; turn <= 20; turn++ {
		for range 50 {
			seq++
			n, _ := fmt.Fprintf(f, `{"seq":%d,"status":200,"response":"%s"}`+"\n", seq, strings.Repeat("r", 200))
			written += int64(n)
		}
		// A call being written when the turn ends waits for the next.
		partial := `{"seq":`
		if turn == 7 {
			f.WriteString(partial)
		}
		pub.TurnEnded()
		if _, err := up.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		got := stored() - before
		want := written - before // turn 8's holds turn 7's partial line, completed
		if got != want {
			t.Fatalf("turn %d uploaded %d bytes, want the %d it added (record %d bytes)", turn, got, want, written)
		}
		if turn == 7 {
			f.WriteString(`1000,"status":200}` + "\n")
			written += int64(len(partial) + len(`1000,"status":200}`+"\n"))
		}
		before = stored()
	}
	whole, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if stored() != int64(len(whole)) {
		t.Fatalf("%d bytes sent for a %d-byte record", stored(), len(whole))
	}
	var got []byte
	if err := store.LoadRecord(ctx, st, store.TrajectoryPrefix("live"), store.ModelCallsName, func(r io.Reader) error {
		got, err = io.ReadAll(r)
		return err
	}); err != nil || string(got) != string(whole) {
		t.Fatalf("record from the chunks: %d bytes, %v; want %d", len(got), err, len(whole))
	}
}
