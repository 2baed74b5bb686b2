// Package chunk makes a running trajectory's trace durable in a store part
// by part, without re-uploading the growing document, and rebuilds the
// trace from those pieces when agent_trace.json never made it to the store
// (the run died).
//
// It ships the mutations trace.Writer reports (Writer.Written, which the
// recorder hands to its publisher after each write, or
// WriterOptions.OnChunk): each mutation's fixed bytes (Data, at Offset) and
// the closing bytes that made the document complete at that moment (Tail).
// One object per mutation, under the trajectory's chunks/ folder:
//
//	chunks/<offset %016d>-1-<kind>.zst   a mutation that fixed new bytes
//	                                     (kind: header, turn-start, part-<%08d>, turn-end)
//	chunks/<offset %016d>-0-tail.zst     a mutation that only changed the tail
//	                                     (trailing parts, finish); a newer one replaces it
//
// Object content (zstd-compressed): an 8-byte big-endian length of Data,
// Data, then Tail. Rebuild concatenates Data in key order while offsets are
// contiguous and appends the Tail of the last chunk it used: the result is
// byte for byte the local agent_trace.json as it was after that mutation, a
// complete valid trace even when later chunks are missing. Each part is
// uploaded once, so remote bytes grow linearly with the trace.
package chunk

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// maxChunk bounds a decoded chunk, so a corrupt object cannot exhaust
// memory.
const maxChunk = 256 << 20

// Codec encodes and decodes chunk objects. It is safe for concurrent use.
type Codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// NewCodec returns a Codec.
func NewCodec() (*Codec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("chunk encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxChunk))
	if err != nil {
		return nil, fmt.Errorf("chunk decoder: %w", err)
	}
	return &Codec{enc: enc, dec: dec}, nil
}

// Name is the object name of c inside a trajectory's chunks/ folder.
func Name(c trace.Chunk) string {
	off := fmt.Sprintf("%016d", c.Offset)
	if len(c.Data) == 0 {
		return off + "-0-tail.zst"
	}
	kind := "tail"
	switch c.Kind {
	case trace.ChunkHeader:
		kind = "header"
	case trace.ChunkTurnStart:
		kind = "turn-start"
	case trace.ChunkPart:
		kind = fmt.Sprintf("part-%08d", c.Part)
	case trace.ChunkTurnEnd:
		kind = "turn-end"
	}
	return off + "-1-" + kind + ".zst"
}

// Key is the store key of c for trajectory id.
func Key(id string, c trace.Chunk) string { return store.ChunksPrefix(id) + Name(c) }

// Encode returns the object bytes for c. It copies what it needs, so c's
// buffers may be reused once it returns.
func (k *Codec) Encode(c trace.Chunk) []byte {
	raw := make([]byte, 8, 8+len(c.Data)+len(c.Tail))
	binary.BigEndian.PutUint64(raw, uint64(len(c.Data)))
	raw = append(append(raw, c.Data...), c.Tail...)
	return k.enc.EncodeAll(raw, make([]byte, 0, len(raw)/3+64))
}

// decode splits an object into Data and Tail.
func (k *Codec) decode(b []byte) (data, tail []byte, err error) {
	raw, err := k.dec.DecodeAll(b, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("decompress: %w", err)
	}
	if len(raw) < 8 {
		return nil, nil, errors.New("truncated chunk")
	}
	n := binary.BigEndian.Uint64(raw)
	if n > uint64(len(raw)-8) {
		return nil, nil, fmt.Errorf("chunk claims %d data bytes, holds %d", n, len(raw)-8)
	}
	return raw[8 : 8+n], raw[8+n:], nil
}

// Enqueuer accepts objects for upload (upload.Uploader implements it).
type Enqueuer interface {
	Enqueue(key string, src store.Source) error
}

// Forward returns a trace.WriterOptions.OnChunk callback that enqueues each
// mutation of trajectory id's trace on e. Enqueue errors (a full queue) go
// to onErr, which may be nil; the local trace stays the source of truth.
func (k *Codec) Forward(e Enqueuer, id string, onErr func(error)) func(trace.Chunk) {
	return func(c trace.Chunk) {
		if err := e.Enqueue(Key(id, c), store.Bytes(k.Encode(c))); err != nil && onErr != nil {
			onErr(fmt.Errorf("enqueue trace chunk at offset %d: %w", c.Offset, err))
		}
	}
}

// Report says what a rebuild found.
type Report struct {
	// Chunks used, and the document size they gave.
	Chunks int
	Size   int64
	// Gap is set when chunks exist beyond a missing range: the rebuilt
	// document stops at GapStart, and the chunk after it starts at GapEnd.
	Gap              bool
	GapStart, GapEnd int64
}

type entry struct {
	key    string
	offset int64
}

// Rebuild assembles agent_trace.json from the chunks under prefix +
// "chunks/", where prefix is a trajectory's folder in st
// (store.TrajectoryPrefix(id), or "" for a store rooted at a trajectory
// folder), and writes it to w. It fails with store.ErrNotFound when there
// are no chunks, and says so when the first chunk does not start the
// document.
func (k *Codec) Rebuild(ctx context.Context, st store.Store, prefix string, w io.Writer) (Report, error) {
	var rep Report
	dir := prefix + store.ChunksDir
	var entries []entry
	err := st.List(ctx, dir, func(fi store.FileInfo) error {
		name := strings.TrimPrefix(fi.Key, dir)
		if len(name) < 17 || name[16] != '-' || !strings.HasSuffix(name, ".zst") {
			return nil // not a chunk
		}
		off, err := strconv.ParseInt(name[:16], 10, 64)
		if err != nil {
			return nil
		}
		entries = append(entries, entry{key: fi.Key, offset: off})
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("list chunks: %w", err)
	}
	if len(entries) == 0 {
		return rep, fmt.Errorf("no trace chunks at %s: %w", st.URI(dir), store.ErrNotFound)
	}
	if entries[0].offset != 0 {
		return rep, fmt.Errorf("trace chunks at %s start at byte %d, not 0: the header chunk is missing", st.URI(dir), entries[0].offset)
	}
	var tail []byte
	for _, e := range entries {
		if e.offset > rep.Size {
			rep.Gap, rep.GapStart, rep.GapEnd = true, rep.Size, e.offset
			break
		}
		if e.offset < rep.Size {
			continue // written again after a resume; the bytes are the same
		}
		var data []byte
		err := st.Load(ctx, e.key, func(r io.Reader) error {
			b, err := io.ReadAll(io.LimitReader(r, maxChunk+1))
			if err != nil {
				return err
			}
			if len(b) > maxChunk {
				return store.Permanent(fmt.Errorf("larger than %d bytes", maxChunk))
			}
			d, t, err := k.decode(b)
			if err != nil {
				return store.Permanent(err)
			}
			data, tail = d, t
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("rebuild trace: chunk %s: %w", e.key, err)
		}
		if _, err := w.Write(data); err != nil {
			return rep, fmt.Errorf("rebuild trace: write: %w", err)
		}
		rep.Size += int64(len(data))
		rep.Chunks++
	}
	if _, err := w.Write(tail); err != nil {
		return rep, fmt.Errorf("rebuild trace: write: %w", err)
	}
	rep.Size += int64(len(tail))
	return rep, nil
}

// RebuildBytes is Rebuild into memory.
func (k *Codec) RebuildBytes(ctx context.Context, st store.Store, prefix string) ([]byte, Report, error) {
	var buf bytes.Buffer
	rep, err := k.Rebuild(ctx, st, prefix, &buf)
	return buf.Bytes(), rep, err
}
