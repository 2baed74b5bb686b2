package store_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
)

// TestLoadRecordFromChunks: without the whole record, the call chunks are
// read back from byte 0 as one record: a resumed run's chunk that
// overlaps the earlier ones is read once, a piece past a gap is not; the
// whole object, once there, wins.
func TestLoadRecordFromChunks(t *testing.T) {
	ctx := context.Background()
	st, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "trajectories/live/"
	record := "line one\nline two\nline three\nline four\n"
	save := func(key, body string) {
		if err := st.Save(ctx, key, store.Bytes([]byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	load := func() (string, error) {
		var got string
		err := store.LoadRecord(ctx, st, prefix, store.ModelCallsName, func(r io.Reader) error {
			b, err := io.ReadAll(r)
			got = string(b)
			return err
		})
		return got, err
	}
	if _, err := load(); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no record: %v", err)
	}
	at := func(s string) int64 { return int64(strings.Index(record, s)) }
	save(store.CallChunkKey("live", store.ModelCallsName, 0, at("line two")), record[:at("line two")])
	save(store.CallChunkKey("live", store.ModelCallsName, at("line two"), at("line four")), record[at("line two"):at("line four")])
	// A resumed run sent the record again from 0, one line further.
	save(store.CallChunkKey("live", store.ModelCallsName, 0, at("line three")), record[:at("line three")])
	save(store.CallChunkKey("live", store.ModelCallsName, at("line four"), int64(len(record))), record[at("line four"):])
	// Past a gap: never reached.
	save(store.CallChunkKey("live", store.ModelCallsName, int64(len(record))+5, int64(len(record))+9), "lost")
	got, err := load()
	if err != nil || got != record {
		t.Fatalf("from chunks: %q, %v; want %q", got, err, record)
	}
	fi, err := store.StatRecord(ctx, st, prefix, store.ModelCallsName)
	if err != nil || fi.Size != int64(len(record))+9 {
		t.Errorf("StatRecord: %+v, %v", fi, err)
	}
	save(prefix+store.ModelCallsName, "whole\n")
	if got, err := load(); err != nil || got != "whole\n" {
		t.Errorf("with the whole object: %q, %v", got, err)
	}
}
