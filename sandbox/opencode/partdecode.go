package opencode

import (
	"encoding/json"

	"github.com/trajlab/traj/trace/jsondec"
)

// decodePart fills p (zero) from raw as json.Unmarshal into the plain
// Part would, without encoding/json: a reader of a long trace decodes
// every part, and encoding/json's check-then-decode of each part's tool
// output was most of an export's time. It reads the shapes OpenCode
// writes; for anything else (a null, a repeated or escaped key, a number
// that is not plain) it returns false with p partly filled, and the
// caller decodes raw with encoding/json from a zero Part. FuzzDecodePart
// holds it to encoding/json.
func decodePart(raw []byte, p *Part) bool {
	end, ok := jsondec.Fields(raw, 0, partKeys, func(k, v int) (int, bool) {
		var end int
		ok := true
		switch k {
		case 0:
			p.ID, end, ok = jsondec.String(raw, v)
		case 1:
			p.SessionID, end, ok = jsondec.String(raw, v)
		case 2:
			p.MessageID, end, ok = jsondec.String(raw, v)
		case 3:
			p.Type, end, ok = jsondec.String(raw, v)
		case 4:
			p.Text, end, ok = jsondec.String(raw, v)
		case 5:
			p.Time = &PartTime{}
			end, ok = decodePartTime(raw, v, p.Time)
		case 6:
			p.Tool, end, ok = jsondec.String(raw, v)
		case 7:
			p.CallID, end, ok = jsondec.String(raw, v)
		case 8:
			p.State = &ToolState{}
			end, ok = decodeToolState(raw, v, p.State)
		case 9:
			p.Reason, end, ok = jsondec.String(raw, v)
		case 10:
			p.Tokens = &Tokens{}
			end, ok = decodeTokens(raw, v, p.Tokens)
		case 11:
			var c float64
			c, end, ok = jsondec.Float64(raw, v)
			p.Cost = &c
		case 12:
			p.Hash, end, ok = jsondec.String(raw, v)
		case 13:
			p.Files, end, ok = jsondec.Strings(raw, v)
		}
		return end, ok
	})
	return ok && jsondec.End(raw, end)
}

// partKeys are Part's JSON keys, in decodePart's order.
var partKeys = []string{"id", "sessionID", "messageID", "type", "text", "time", "tool", "callID", "state", "reason", "tokens", "cost", "hash", "files"}

func decodePartTime(raw []byte, i int, t *PartTime) (int, bool) {
	return jsondec.Fields(raw, i, []string{"start", "end"}, func(k, v int) (int, bool) {
		n, end, ok := jsondec.Int64(raw, v)
		if k == 0 {
			t.Start = n
		} else {
			t.End = &n
		}
		return end, ok
	})
}

func decodeToolState(raw []byte, i int, s *ToolState) (int, bool) {
	return jsondec.Fields(raw, i, []string{"status", "input", "output", "error", "title", "metadata", "time"}, func(k, v int) (int, bool) {
		var end int
		ok := true
		switch k {
		case 0:
			s.Status, end, ok = jsondec.String(raw, v)
		case 1:
			s.Input, end, ok = jsondec.Raw(raw, v)
		case 2:
			s.Output, end, ok = jsondec.String(raw, v)
		case 3:
			s.Error, end, ok = jsondec.String(raw, v)
		case 4:
			s.Title, end, ok = jsondec.String(raw, v)
		case 5:
			s.Metadata, end, ok = jsondec.Raw(raw, v)
		case 6:
			s.Time = &PartTime{}
			end, ok = decodePartTime(raw, v, s.Time)
		}
		return end, ok
	})
}

func decodeTokens(raw []byte, i int, t *Tokens) (int, bool) {
	return jsondec.Fields(raw, i, []string{"total", "input", "output", "reasoning", "cache"}, func(k, v int) (int, bool) {
		var end int
		ok := true
		switch k {
		case 0:
			t.Total, end, ok = jsondec.Float64(raw, v)
		case 1:
			t.Input, end, ok = jsondec.Float64(raw, v)
		case 2:
			t.Output, end, ok = jsondec.Float64(raw, v)
		case 3:
			t.Reasoning, end, ok = jsondec.Float64(raw, v)
		case 4:
			end, ok = jsondec.Fields(raw, v, []string{"read", "write"}, func(k, v int) (int, bool) {
				f, end, ok := jsondec.Float64(raw, v)
				if k == 0 {
					t.Cache.Read = f
				} else {
					t.Cache.Write = f
				}
				return end, ok
			})
		}
		return end, ok
	})
}

// toolInput is what traj reads of a built-in tool's arguments.
type toolInput struct {
	FilePath    string `json:"filePath"`
	OldString   string `json:"oldString"`
	NewString   string `json:"newString"`
	ReplaceAll  bool   `json:"replaceAll"`
	Content     string `json:"content"`
	Command     string `json:"command"`
	Description string `json:"description"`
	Prompt      string `json:"prompt"`
}

var toolInputKeys = []string{"filePath", "oldString", "newString", "replaceAll", "content", "command", "description", "prompt"}

// readToolInput decodes a tool's arguments as json.Unmarshal into
// toolInput does (a write's content can be a whole file).
func readToolInput(raw json.RawMessage) (toolInput, error) {
	var in toolInput
	end, ok := jsondec.Fields(raw, 0, toolInputKeys, func(k, v int) (int, bool) {
		var end int
		ok := true
		switch k {
		case 0:
			in.FilePath, end, ok = jsondec.String(raw, v)
		case 1:
			in.OldString, end, ok = jsondec.String(raw, v)
		case 2:
			in.NewString, end, ok = jsondec.String(raw, v)
		case 3:
			in.ReplaceAll, end, ok = jsondec.Bool(raw, v)
		case 4:
			in.Content, end, ok = jsondec.String(raw, v)
		case 5:
			in.Command, end, ok = jsondec.String(raw, v)
		case 6:
			in.Description, end, ok = jsondec.String(raw, v)
		case 7:
			in.Prompt, end, ok = jsondec.String(raw, v)
		}
		return end, ok
	})
	if ok && jsondec.End(raw, end) {
		return in, nil
	}
	in = toolInput{}
	err := json.Unmarshal(raw, &in)
	return in, err
}

// toolMetadata is what traj reads of a tool state's metadata: whether
// OpenCode cut the output, and the file it kept it in.
type toolMetadata struct {
	Truncated  bool   `json:"truncated"`
	OutputPath string `json:"outputPath"`
}

// readMetadata decodes metadata as json.Unmarshal into toolMetadata does.
func readMetadata(raw json.RawMessage) (toolMetadata, error) {
	var md toolMetadata
	end, ok := jsondec.Fields(raw, 0, []string{"truncated", "outputPath"}, func(k, v int) (int, bool) {
		var end int
		ok := true
		if k == 0 {
			md.Truncated, end, ok = jsondec.Bool(raw, v)
		} else {
			md.OutputPath, end, ok = jsondec.String(raw, v)
		}
		return end, ok
	})
	if ok && jsondec.End(raw, end) {
		return md, nil
	}
	md = toolMetadata{}
	err := json.Unmarshal(raw, &md)
	return md, err
}
