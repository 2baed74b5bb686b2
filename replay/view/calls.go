package view

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/trajlab/traj/sandbox/gateway/model/calls"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// CallRow is one model call of the model gateway's record
// (model_calls.jsonl beside the trace), without its response body.
type CallRow struct {
	Seq         int           `json:"seq"`
	StartedAt   string        `json:"started_at"`
	LatencyMS   float64       `json:"latency_ms"`
	FirstByteMS *float64      `json:"first_byte_ms,omitempty"`
	API         string        `json:"api"`
	Status      int           `json:"status"`
	Model       string        `json:"model,omitempty"`
	Tokens      *trace.Tokens `json:"tokens,omitempty"`
	Cost        *float64      `json:"cost,omitempty"`
	PartsBefore *int          `json:"parts_before,omitempty"`
	ResponseID  string        `json:"response_id,omitempty"`
	ToolCallIDs []string      `json:"tool_call_ids,omitempty"`
	Error       string        `json:"error,omitempty"`
	// ResponseBytes is the size of the recorded response body.
	ResponseBytes int `json:"response_bytes"`
}

// callIndex is a trajectory's model-call record without the response
// bodies (they are most of its bytes and are read again when asked for).
type callIndex struct {
	rows  []CallRow
	stamp string
}

// loadCalls reads the record of the trajectory at prefix in st, when it
// has one (nil, nil when not), keeping each line's small fields.
func loadCalls(ctx context.Context, st store.Store, prefix string) (*callIndex, error) {
	key := prefix + store.ModelCallsName
	fi, err := store.StatRecord(ctx, st, prefix, store.ModelCallsName)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ci := &callIndex{stamp: fmt.Sprint(fi.Size, fi.ModTime.UnixNano())}
	err = store.LoadRecord(ctx, st, prefix, store.ModelCallsName, func(r io.Reader) error {
		ci.rows = ci.rows[:0]
		_, err := calls.ScanRecord(r, func(c calls.Call) error {
			ci.rows = append(ci.rows, CallRow{Seq: c.Seq, StartedAt: c.StartedAt, LatencyMS: c.LatencyMS, FirstByteMS: c.FirstByteMS,
				API: c.API, Status: c.Status, Model: c.Model, Tokens: c.Tokens, Cost: c.Cost, PartsBefore: c.PartsBefore,
				ResponseID: c.ResponseID, ToolCallIDs: c.ToolCallIDs, Error: c.Error, ResponseBytes: len(c.Response)})
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", st.URI(key), err)
	}
	sort.SliceStable(ci.rows, func(i, j int) bool { return ci.rows[i].Seq < ci.rows[j].Seq })
	return ci, nil
}

// forPart returns the calls that produced part n: the call seq the part
// names (part.model_call, seq > 0), else those whose response or tool
// call ids are the part's message or tool call, else those that started
// when the trace held n-1 parts (traces recorded before model_call).
func (ci *callIndex) forPart(n int, messageID, callID string, seq int) []CallRow {
	var byID, byCount []CallRow
	for _, c := range ci.rows {
		if seq > 0 {
			// The part names its call (part.model_call).
			if c.Seq == seq {
				return []CallRow{c}
			}
			continue
		}
		linked := messageID != "" && c.ResponseID == messageID
		for _, id := range c.ToolCallIDs {
			linked = linked || callID != "" && id == callID
		}
		if linked {
			byID = append(byID, c)
		} else if c.PartsBefore != nil && *c.PartsBefore == n-1 {
			byCount = append(byCount, c)
		}
	}
	if len(byID) > 0 {
		return byID
	}
	return byCount
}

// CallDetail is one model call with its response body (clipped).
type CallDetail struct {
	CallRow
	Request calls.Digest `json:"request"`
	// Reply is the response put back together (text, reasoning, tool
	// calls), when the gateway's API is one calls.Assemble reads.
	Reply     *calls.Reply `json:"reply,omitempty"`
	Response  string       `json:"response"`
	Truncated bool         `json:"truncated"`
}

// loadCall reads call seq of the record again, with its response.
func loadCall(ctx context.Context, st store.Store, prefix string, seq int) (*CallDetail, error) {
	var out *CallDetail
	errFound := errors.New("found")
	err := store.LoadRecord(ctx, st, prefix, store.ModelCallsName, func(r io.Reader) error {
		_, err := calls.ScanRecord(r, func(c calls.Call) error {
			if c.Seq != seq {
				return nil
			}
			out = &CallDetail{CallRow: CallRow{Seq: c.Seq, StartedAt: c.StartedAt, LatencyMS: c.LatencyMS, FirstByteMS: c.FirstByteMS,
				API: c.API, Status: c.Status, Model: c.Model, Tokens: c.Tokens, Cost: c.Cost, PartsBefore: c.PartsBefore,
				ResponseID: c.ResponseID, ToolCallIDs: c.ToolCallIDs, Error: c.Error, ResponseBytes: len(c.Response)},
				Request: c.Request, Response: c.Response, Truncated: c.ResponseTruncated}
			return errFound
		})
		return err
	})
	if err != nil && !errors.Is(err, errFound) {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("model call %d: %w", seq, errNoSuchPath)
	}
	if r, ok := calls.Assemble(out.API, []byte(out.Response)); ok && (r.Text != "" || r.Reasoning != "" || len(r.ToolCalls) > 0) {
		r.Text, r.Reasoning = clipBytes(r.Text, maxTextBytes), clipBytes(r.Reasoning, maxTextBytes)
		out.Reply = &r
	}
	if len(out.Response) > maxTextBytes {
		out.Response, out.Truncated = clipBytes(out.Response, maxTextBytes), true
	}
	out.Response = prettyIfJSON(out.Response)
	return out, nil
}

func prettyIfJSON(s string) string {
	var b bytes.Buffer
	if json.Valid([]byte(s)) && json.Indent(&b, []byte(s), "", "  ") == nil {
		return b.String()
	}
	return s
}
