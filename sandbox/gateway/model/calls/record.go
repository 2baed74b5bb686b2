package calls

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/trajlab/traj/trace"
)

// Totals add up the calls of a record (Add).
type Totals struct {
	Calls  int          `json:"calls"`
	Failed int          `json:"failed"` // calls answered with a status >= 400 or not at all
	Tokens trace.Tokens `json:"tokens"`
	Cost   float64      `json:"cost"`
	// LastSeq is the highest seq added.
	LastSeq int `json:"-"`
}

// Add counts c.
func (t *Totals) Add(c Call) {
	t.Calls++
	t.LastSeq = max(t.LastSeq, c.Seq)
	if c.Status >= 400 || c.Status == 0 {
		t.Failed++
	}
	if c.Tokens != nil {
		t.Tokens.Add(*c.Tokens)
	}
	if c.Cost != nil {
		t.Cost += *c.Cost
	}
}

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
	// Cut is set by a reader, never recorded: the bytes of a line longer
	// than MaxLineBytes, read streaming with its strings cut (see
	// ScanRecord).
	Cut int64 `json:"-"`
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

// MaxLineBytes is the longest record line a reader decodes whole. A
// longer line is streamed: every string value in it is cut to its first
// MaxCutString bytes as it is read, and the call comes out with
// ResponseTruncated and Cut set (playback refuses to play it, saying
// why), so no reader holds the line: a 300 MB line took `traj replay
// rerun` to 4.25 GB. A model's response is kilobytes to a few megabytes
// (128k output tokens are about 0.5 MB of text, its SSE framing a few
// times that); the gateway's own cap (MaxResponseBytes, 64 MiB) is a
// backstop, not a size seen. Reading a line costs about four times its
// length at the peak (buffer growth, the decoded copy, the collector's
// slack), so this bounds a reader's memory to about 130 MB.
const MaxLineBytes = 32 << 20

// MaxCutString is how much of each string value of a streamed line is
// kept.
const MaxCutString = 64 << 10

// ScanRecord adds up a record read from r. A torn last line (the process
// died mid-write) is ignored; any other bad line is an error. Lines longer
// than MaxLineBytes are streamed (see MaxLineBytes).
func ScanRecord(r io.Reader, fn func(Call) error) (Totals, error) {
	return scanRecord(r, fn, MaxLineBytes)
}

func scanRecord(r io.Reader, fn func(Call) error, maxLine int) (Totals, error) {
	var t Totals
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for n := 1; ; n++ {
		line = line[:0]
		var cut *cutter
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			if cut != nil {
				cut.write(chunk)
			} else if len(line)+len(chunk) > maxLine {
				cut = &cutter{}
				cut.write(line)
				cut.write(chunk)
				line = nil // the long line's bytes are not kept
			} else {
				line = append(line, chunk...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		whole := (cut == nil && len(line) > 0 && line[len(line)-1] == '\n') || (cut != nil && cut.ended)
		if whole {
			var c Call
			b := line
			if cut != nil {
				b = cut.out.Bytes()
			}
			if jerr := json.Unmarshal(b, &c); jerr != nil {
				return t, fmt.Errorf("model-call record line %d: %w", n, jerr)
			}
			if cut != nil {
				c.Cut = cut.in
				c.ResponseTruncated = c.ResponseTruncated || cut.cut > 0
			}
			t.Add(c)
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
		if cut != nil {
			line = make([]byte, 0, 4096)
		}
	}
}

// cutter copies a JSON line with every string value cut to its first
// MaxCutString bytes, at a boundary that leaves the JSON valid (never
// inside an escape).
type cutter struct {
	out     bytes.Buffer
	in      int64 // bytes of the line read
	cut     int64 // bytes left out
	inStr   bool
	esc     int // bytes of an escape still to come
	strLen  int // bytes of the current string kept
	cutting bool
	ended   bool
}

func (c *cutter) write(p []byte) {
	c.in += int64(len(p))
	for i := 0; i < len(p); i++ {
		b := p[i]
		if !c.inStr {
			c.out.WriteByte(b)
			switch b {
			case '"':
				c.inStr, c.strLen, c.cutting, c.esc = true, 0, false, 0
			case '\n':
				c.ended = true
			}
			continue
		}
		switch {
		case c.esc > 0:
			c.esc--
			if b == 'u' && c.esc == 0 {
				c.esc = 4 // the escape was \u: four hex digits follow
			}
		case b == '\\':
			c.esc = 1
		case b == '"':
			c.inStr = false
			c.out.WriteByte(b)
			continue
		default:
			if c.strLen >= MaxCutString {
				c.cutting = true
			}
		}
		if c.cutting {
			c.cut++
			continue
		}
		c.out.WriteByte(b)
		c.strLen++
	}
}

// LoadAnswered reads the calls of the record at path the upstream
// answered (Answered): the calls a rerun can play, and those a rerun's
// comparison pairs.
func LoadAnswered(path string) ([]Call, error) {
	var out []Call
	if _, err := ReadRecord(path, func(c Call) error {
		if Answered(c) {
			out = append(out, c)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// Answered says whether the upstream answered call c (its response can be
// played): not refused by the gateway, not abandoned by the harness
// before an answer (499), not an endpoint that could not be reached.
func Answered(c Call) bool {
	switch {
	case c.Status <= 0 || c.Status == 499:
		return false
	case strings.HasPrefix(c.Error, "refused: "):
		return false
	case c.Status == http.StatusBadGateway && c.Response == "" && c.Error != "":
		return false
	}
	return true
}
