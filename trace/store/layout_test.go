package store_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

func TestLayout(t *testing.T) {
	cases := map[string]string{
		store.TraceKey("t1"):                 "trajectories/t1/agent_trace.json",
		store.BundleKey("t1"):                "trajectories/t1/repo.bundle",
		store.PartIndexKey("t1"):             "trajectories/t1/agent_trace.index",
		trace.PartIndexPath(store.TraceName): store.PartIndexName,
		store.HistoryBundleKey("t1", 7):      "trajectories/t1/history/00000007.bundle",
		store.ChunksPrefix("t1"):             "trajectories/t1/chunks/",
		store.EvaluationKey("t1"):            "trajectories/t1/evaluation.json",
		store.LogKey("t1", "run.log"):        "trajectories/t1/logs/run.log",
		store.EvalCacheKey("ab12"):           "evalcache/ab12.json",
		store.ModelCallsKey("t1"):            "trajectories/t1/model_calls.jsonl",
		store.ToolCallsKey("t1"):             "trajectories/t1/tool_calls.jsonl",
		store.RunStateKey("t1"):              "trajectories/t1/logs/run.json",
		store.SummaryKey("t1"):               "trajectories/t1/summary.json",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
		if err := store.ValidatePrefix(got); err != nil {
			t.Errorf("%s: %v", got, err)
		}
	}
	// Lexical order of history keys is part order.
	if !(store.HistoryBundleKey("t", 9) < store.HistoryBundleKey("t", 10)) {
		t.Error("history keys do not sort by part")
	}
}

func TestValidateID(t *testing.T) {
	good := []string{"t1", "c-compiler-20261121T103000-ab12", "run.2", "ünïcode"}
	bad := []string{"", ".", "..", "a/b", `a\b`, "../x", "a b", "tab\t", "nl\n", "nul\x00", "\xff", strings.Repeat("a", 201)}
	for _, id := range good {
		if err := store.ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
	}
	for _, id := range bad {
		if err := store.ValidateID(id); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidKey", id, err)
		}
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("access denied")
	if !store.IsPermanent(store.Permanent(base)) || !errors.Is(store.Permanent(base), base) {
		t.Error("Permanent does not mark or unwrap")
	}
	if store.IsPermanent(base) || store.Permanent(nil) != nil {
		t.Error("unmarked error counted as permanent")
	}
	if !store.IsPermanent(store.ErrNotFound) || !store.IsPermanent(store.ErrInvalidKey) {
		t.Error("not found and invalid key must not be retried")
	}
}

// The S3 backend sends in-memory bodies in place only when they are an
// io.ReaderAt; hiding it would copy every uploaded chunk once more.
func TestBytesOpenIsReaderAt(t *testing.T) {
	rc, n, err := store.Bytes("abc").Open()
	if err != nil || n != 3 {
		t.Fatalf("Open = %d, %v", n, err)
	}
	if _, ok := rc.(io.ReaderAt); !ok {
		t.Fatalf("Bytes.Open returns %T, not an io.ReaderAt", rc)
	}
}
