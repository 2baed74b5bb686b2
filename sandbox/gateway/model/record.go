package model

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/trajlab/traj/trace"
)

// Call is one line of the model-call record.
type Call struct {
	Seq       int    `json:"seq"`
	StartedAt string `json:"started_at"`
	// LatencyMS is the time to the end of the response; FirstByteMS to
	// its first byte.
	LatencyMS   float64  `json:"latency_ms"`
	FirstByteMS *float64 `json:"first_byte_ms,omitempty"`
	API         string   `json:"api"`
	Method      string   `json:"method"`
	Path        string   `json:"path"`
	Status      int      `json:"status"`
	Model       string   `json:"model,omitempty"`
	Stream      bool     `json:"stream"`
	// Tools is how many tools the request offered (0: a side request,
	// such as a title, which no part comes from).
	Tools int `json:"tools,omitempty"`
	// Request is the request body by digest and size, never whole.
	Request Digest `json:"request"`
	// ResponseID and ToolCallIDs link the call to the parts it produced
	// (the message id and tool call ids the harness reports).
	ResponseID  string   `json:"response_id,omitempty"`
	ToolCallIDs []string `json:"tool_call_ids,omitempty"`
	// Outputs are the response's output items in order, by kind
	// ("reasoning", "text", "tool"): each becomes one part of a harness
	// that records it, so a call's tokens are shared among them.
	Outputs []string      `json:"outputs,omitempty"`
	Tokens  *trace.Tokens `json:"tokens,omitempty"`
	Cost    *float64      `json:"cost,omitempty"`
	// PartsBefore is how many parts the trace held when the call started.
	PartsBefore *int   `json:"parts_before,omitempty"`
	Error       string `json:"error,omitempty"`
	// Response is the body as received, verbatim (SSE text or JSON).
	Response          string `json:"response"`
	ResponseTruncated bool   `json:"response_truncated,omitempty"`
}

// Digest names a request body without storing it.
type Digest struct {
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
	// Normalized is the SHA-256 of the body with what its harness
	// documents as varying from run to run (harness.Harness.Varying:
	// OpenCode's session ids) blanked; empty when nothing was.
	Normalized string `json:"normalized_sha256,omitempty"`
}

// Same says whether a and b name the same request: the same bytes, or
// the same once the harness's varying fields are blanked.
func (a Digest) Same(b Digest) bool {
	return a.SHA256 == b.SHA256 || (a.Normalized != "" && a.Normalized == b.Normalized)
}

// Differs says how a request differs from the recorded one r.
func (a Digest) Differs(r Digest) string {
	return fmt.Sprintf("the request is not the recorded bytes (%d bytes, recorded %d), not even with the harness's varying fields blanked: "+
		"a tool printed something else this time (a file time, a random value) or the harness sent a field its adapter does not document; "+
		"the record keeps digests, not bodies", a.Bytes, r.Bytes)
}

// DigestOf is how the record names a request body; varying (nil: none)
// matches what the harness documents as varying from run to run.
func DigestOf(body []byte, varying *regexp.Regexp) Digest {
	sum := sha256.Sum256(body)
	d := Digest{SHA256: hex.EncodeToString(sum[:]), Bytes: len(body)}
	if varying != nil {
		if n := varying.ReplaceAll(body, []byte("…")); !bytes.Equal(n, body) {
			ns := sha256.Sum256(n)
			d.Normalized = hex.EncodeToString(ns[:])
		}
	}
	return d
}

// ReadRecord adds up a record file, calling fn (when not nil) for each call.
func ReadRecord(path string, fn func(Call) error) (Totals, error) {
	f, err := os.Open(path)
	if err != nil {
		return Totals{}, fmt.Errorf("read model-call record: %w", err)
	}
	defer f.Close()
	return ScanRecord(f, fn)
}

// ScanRecord adds up a record read from r. A torn last line (the process
// died mid-write) is ignored; any other bad line is an error.
func ScanRecord(r io.Reader, fn func(Call) error) (Totals, error) {
	var t Totals
	br := bufio.NewReader(r)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			var c Call
			if jerr := json.Unmarshal(b, &c); jerr != nil {
				return t, fmt.Errorf("model-call record line %d: %w", line, jerr)
			}
			t.add(c)
			if fn != nil {
				if ferr := fn(c); ferr != nil {
					return t, ferr
				}
			}
		}
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return t, fmt.Errorf("read model-call record: %w", err)
		}
	}
}
