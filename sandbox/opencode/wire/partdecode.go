package wire

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
	end, ok := jsondec.Fields(raw, 0, partKeys, func(key string, v int) (int, bool) {
		switch key {
		case "id":
			return str(raw, v, &p.ID)
		case "sessionID":
			return str(raw, v, &p.SessionID)
		case "messageID":
			return str(raw, v, &p.MessageID)
		case "type":
			return str(raw, v, &p.Type)
		case "text":
			return str(raw, v, &p.Text)
		case "time":
			p.Time = &PartTime{}
			return decodePartTime(raw, v, p.Time)
		case "tool":
			return str(raw, v, &p.Tool)
		case "callID":
			return str(raw, v, &p.CallID)
		case "state":
			p.State = &ToolState{}
			return decodeToolState(raw, v, p.State)
		case "reason":
			return str(raw, v, &p.Reason)
		case "tokens":
			p.Tokens = &Tokens{}
			return decodeTokens(raw, v, p.Tokens)
		case "cost":
			p.Cost = new(float64)
			return num(raw, v, p.Cost)
		case "hash":
			return str(raw, v, &p.Hash)
		case "files":
			var end int
			var ok bool
			p.Files, end, ok = jsondec.Strings(raw, v)
			return end, ok
		}
		return 0, false
	})
	return ok && jsondec.End(raw, end)
}

// partKeys are Part's JSON keys.
var partKeys = []string{"id", "sessionID", "messageID", "type", "text", "time", "tool", "callID", "state", "reason", "tokens", "cost", "hash", "files"}

func decodePartTime(raw []byte, i int, t *PartTime) (int, bool) {
	return jsondec.Fields(raw, i, []string{"start", "end"}, func(key string, v int) (int, bool) {
		n, end, ok := jsondec.Int64(raw, v)
		if key == "start" {
			t.Start = n
		} else {
			t.End = &n
		}
		return end, ok
	})
}

func decodeToolState(raw []byte, i int, s *ToolState) (int, bool) {
	return jsondec.Fields(raw, i, []string{"status", "input", "output", "error", "title", "metadata", "time"}, func(key string, v int) (int, bool) {
		switch key {
		case "status":
			return str(raw, v, &s.Status)
		case "input":
			return rawValue(raw, v, &s.Input)
		case "output":
			return str(raw, v, &s.Output)
		case "error":
			return str(raw, v, &s.Error)
		case "title":
			return str(raw, v, &s.Title)
		case "metadata":
			return rawValue(raw, v, &s.Metadata)
		case "time":
			s.Time = &PartTime{}
			return decodePartTime(raw, v, s.Time)
		}
		return 0, false
	})
}

func decodeTokens(raw []byte, i int, t *Tokens) (int, bool) {
	return jsondec.Fields(raw, i, []string{"total", "input", "output", "reasoning", "cache"}, func(key string, v int) (int, bool) {
		switch key {
		case "total":
			return num(raw, v, &t.Total)
		case "input":
			return num(raw, v, &t.Input)
		case "output":
			return num(raw, v, &t.Output)
		case "reasoning":
			return num(raw, v, &t.Reasoning)
		case "cache":
			return jsondec.Fields(raw, v, []string{"read", "write"}, func(key string, v int) (int, bool) {
				if key == "read" {
					return num(raw, v, &t.Cache.Read)
				}
				return num(raw, v, &t.Cache.Write)
			})
		}
		return 0, false
	})
}

// str, num, flag and rawValue decode the value at raw[v] into dst.
func str(raw []byte, v int, dst *string) (int, bool) {
	s, end, ok := jsondec.String(raw, v)
	*dst = s
	return end, ok
}

func num(raw []byte, v int, dst *float64) (int, bool) {
	f, end, ok := jsondec.Float64(raw, v)
	*dst = f
	return end, ok
}

func flag(raw []byte, v int, dst *bool) (int, bool) {
	b, end, ok := jsondec.Bool(raw, v)
	*dst = b
	return end, ok
}

func rawValue(raw []byte, v int, dst *json.RawMessage) (int, bool) {
	r, end, ok := jsondec.Raw(raw, v)
	*dst = r
	return end, ok
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
	Pattern     string `json:"pattern"`
	Path        string `json:"path"`
	TestPath    string `json:"test_path"`
}

var toolInputKeys = []string{"filePath", "oldString", "newString", "replaceAll", "content", "command", "description", "prompt", "pattern", "path", "test_path"}

// readToolInput decodes a tool's arguments as json.Unmarshal into
// toolInput does (a write's content can be a whole file).
func readToolInput(raw json.RawMessage) (toolInput, error) {
	var in toolInput
	end, ok := jsondec.Fields(raw, 0, toolInputKeys, func(key string, v int) (int, bool) {
		switch key {
		case "filePath":
			return str(raw, v, &in.FilePath)
		case "oldString":
			return str(raw, v, &in.OldString)
		case "newString":
			return str(raw, v, &in.NewString)
		case "replaceAll":
			return flag(raw, v, &in.ReplaceAll)
		case "content":
			return str(raw, v, &in.Content)
		case "command":
			return str(raw, v, &in.Command)
		case "description":
			return str(raw, v, &in.Description)
		case "prompt":
			return str(raw, v, &in.Prompt)
		case "pattern":
			return str(raw, v, &in.Pattern)
		case "path":
			return str(raw, v, &in.Path)
		case "test_path":
			return str(raw, v, &in.TestPath)
		}
		return 0, false
	})
	if ok && jsondec.End(raw, end) {
		return in, nil
	}
	in = toolInput{}
	err := json.Unmarshal(raw, &in)
	return in, err
}

// toolMetadata is what traj reads of a tool state's metadata: whether
// OpenCode cut the output, and the file it kept it in; bash's exit code.
type toolMetadata struct {
	Truncated  bool   `json:"truncated"`
	OutputPath string `json:"outputPath"`
	Exit       *int   `json:"exit"`
}

// readMetadata decodes metadata as json.Unmarshal into toolMetadata does.
func readMetadata(raw json.RawMessage) (toolMetadata, error) {
	var md toolMetadata
	end, ok := jsondec.Fields(raw, 0, []string{"truncated", "outputPath", "exit"}, func(key string, v int) (int, bool) {
		switch key {
		case "truncated":
			return flag(raw, v, &md.Truncated)
		case "exit":
			n, end, ok := jsondec.Int64(raw, v)
			if !ok || int64(int(n)) != n {
				return end, false // null or out of range: encoding/json decides
			}
			e := int(n)
			md.Exit = &e
			return end, true
		}
		return str(raw, v, &md.OutputPath)
	})
	if ok && jsondec.End(raw, end) {
		return md, nil
	}
	md = toolMetadata{}
	err := json.Unmarshal(raw, &md)
	return md, err
}
