package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/jsondec"
)

// decodePart decodes a part's bytes into p exactly as json.Unmarshal
// would, in one walk over its fields: the content is kept as the slice
// of raw it is (the harness's reader decodes it next), plain strings and
// integers are taken as they are, and only the small structured fields go
// through encoding/json. A part it cannot vouch for — a key that is not
// one of Part's exact names (another case, an escape, a field unknown to
// this version), data after the object — is decoded by json.Unmarshal
// whole.
// p must be zero; raw must stay unchanged while p is used.
func decodePart(raw []byte, p *trace.Part) error {
	tail := bytes.IndexByte(raw, '{') + 1 // just after the last field
	err := trace.ObjectFields(raw, func(key, val []byte) error {
		tail = cap(raw) - cap(val) + len(val)
		f, ok := partFields[string(key)]
		if !ok {
			return errSlowPart
		}
		// A key given twice decodes again into the same field, as
		// json.Unmarshal does (FuzzDecodePart holds them to it).
		switch f {
		case fPart:
			return decodeInt(val, &p.Part)
		case fTimestamp:
			return decodeString(val, &p.Timestamp)
		case fPrompt:
			return decodeString(val, &p.Prompt)
		case fMessageID:
			return decodeString(val, &p.MessageID)
		case fSessions:
			return decodeRawList(val, &p.Sessions)
		case fSessionIDs:
			return decodeStrings(val, &p.SessionIDs)
		case fNewMessages:
			return decodeRawList(val, &p.NewMessages)
		case fEnvoiCalls:
			if string(val) == "[]" {
				p.EnvoiCalls = []trace.EnvoiCall{}
				return nil
			}
			return json.Unmarshal(val, &p.EnvoiCalls)
		case fRepoCheckpoint:
			return decodeCheckpoint(val, &p.RepoCheckpoint)
		case fGitCommit:
			return decodeString(val, &p.GitCommit)
		case fSessionID:
			return decodeString(val, &p.SessionID)
		case fPartID:
			return decodeString(val, &p.PartID)
		case fPartType:
			return decodeString(val, &p.PartType)
		case fTool:
			return decodeString(val, &p.Tool)
		case fContent:
			// What json.RawMessage keeps: the value's bytes, null too. Its
			// syntax is checked where it is read (readOptions.prepare).
			p.Content = val
			return nil
		case fOtherParts:
			return decodeRawList(val, &p.OtherParts)
		case fTokens:
			return decodeTokens(val, &p.Tokens)
		case fCost:
			return json.Unmarshal(val, &p.Cost)
		case fGroundTruth:
			return json.Unmarshal(val, &p.GroundTruth)
		case fGatewayCalls:
			return json.Unmarshal(val, &p.GatewayCalls)
		case fModelCall:
			return json.Unmarshal(val, &p.ModelCall)
		case fHarnessTokens:
			return decodeTokens(val, &p.HarnessTokens)
		case fHarnessCost:
			return json.Unmarshal(val, &p.HarnessCost)
		}
		return errSlowPart
	})
	if err == nil && tail > 0 && string(bytes.Trim(raw[tail:], " \t\r\n")) == "}" {
		return nil
	}
	// Anything else is json.Unmarshal's to decide, and its error is the
	// error.
	*p = trace.Part{}
	return json.Unmarshal(raw, p)
}

var errSlowPart = errors.New("part needs encoding/json")

const (
	fPart = iota
	fTimestamp
	fPrompt
	fMessageID
	fSessions
	fSessionIDs
	fNewMessages
	fEnvoiCalls
	fRepoCheckpoint
	fGitCommit
	fSessionID
	fPartID
	fPartType
	fTool
	fContent
	fOtherParts
	fTokens
	fCost
	fGroundTruth
	fGatewayCalls
	fModelCall
	fHarnessTokens
	fHarnessCost
)

// partFields are trace.Part's JSON names (TestDecodePartKnowsEveryField
// checks them against its tags).
var partFields = map[string]int{
	"part": fPart, "timestamp": fTimestamp, "prompt": fPrompt, "message_id": fMessageID,
	"sessions": fSessions, "session_ids": fSessionIDs, "new_messages": fNewMessages,
	"envoi_calls": fEnvoiCalls, "repo_checkpoint": fRepoCheckpoint, "git_commit": fGitCommit,
	"session_id": fSessionID, "part_id": fPartID, "part_type": fPartType, "tool": fTool,
	"content": fContent, "other_parts": fOtherParts, "tokens": fTokens, "cost": fCost,
	"ground_truth": fGroundTruth, "gateway_calls": fGatewayCalls,
	"model_call": fModelCall, "harness_tokens": fHarnessTokens, "harness_cost": fHarnessCost,
}

// decodeString decodes a JSON string with jsondec; anything else (null,
// another type, invalid JSON) goes through encoding/json.
func decodeString(val []byte, s *string) error {
	if v, end, ok := jsondec.String(val, 0); ok && end == len(val) {
		*s = v
		return nil
	}
	return json.Unmarshal(val, s)
}

// decodeInt takes a plain decimal integer as it is; anything else goes
// through encoding/json.
func decodeInt(val []byte, n *int) error {
	ok := len(val) > 0 && len(val) < 18 && (val[0] != '0' || len(val) == 1)
	for _, c := range val {
		if c < '0' || c > '9' {
			ok = false
			break
		}
	}
	if ok {
		v, err := strconv.Atoi(string(val))
		if err == nil {
			*n = v
			return nil
		}
	}
	return json.Unmarshal(val, n)
}

// decodeRawList decodes a list of verbatim values as slices of val (one
// syntax check, no copies); anything but an array goes through
// encoding/json.
func decodeRawList(val []byte, out *[]json.RawMessage) error {
	if string(val) == "[]" {
		*out = []json.RawMessage{}
		return nil
	}
	if len(val) > 0 && val[0] == '[' {
		list := []json.RawMessage{}
		end, ok := jsondec.Array(val, 0, func(v int) (int, bool) {
			end, ok := jsondec.Skip(val, v)
			if ok {
				list = append(list, val[v:end])
			}
			return end, ok
		})
		if ok && jsondec.End(val, end) {
			*out = list
			return nil
		}
	}
	return json.Unmarshal(val, out)
}

// decodeStrings takes a list of plain strings as they are; anything else
// goes through encoding/json.
func decodeStrings(val []byte, out *[]string) error {
	if plainStrings(val, out) {
		return nil
	}
	return json.Unmarshal(val, out)
}

// plainStrings sets out to the JSON array val of plain strings
// (plainString); false, out untouched, for anything else.
func plainStrings(val []byte, out *[]string) bool {
	if len(val) == 0 || val[0] != '[' {
		return false
	}
	list := []string{}
	err := trace.ArrayValues(val, func(v []byte) error {
		var s string
		if !plainString(v, &s) {
			return errSlowPart
		}
		list = append(list, s)
		return nil
	})
	if err != nil || !bytes.HasSuffix(val, []byte("]")) {
		return false
	}
	*out = list
	return true
}

// plainString sets s to the JSON string val when it has no escapes,
// control bytes or non-ASCII bytes (its bytes are then its value).
func plainString(val []byte, s *string) bool {
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
		return false
	}
	body := val[1 : len(val)-1]
	for _, c := range body {
		if c < 0x20 || c == '\\' || c == '"' || c >= utf8.RuneSelf {
			return false
		}
	}
	*s = string(body)
	return true
}

// decodeCheckpoint decodes a repo_checkpoint object of the usual keys
// and plain values; anything else (another key, null, an escape, another
// type) goes through encoding/json.
func decodeCheckpoint(val []byte, out **trace.RepoCheckpoint) error {
	return decodePlainObject(val, out, func(c *trace.RepoCheckpoint, key, v []byte) bool {
		switch string(key) {
		case "commit_before":
			return plainString(v, &c.CommitBefore)
		case "commit_after":
			return plainString(v, &c.CommitAfter)
		case "agent_git_head":
			return plainString(v, &c.AgentGitHead)
		case "committed":
			return plainBool(v, &c.Committed)
		case "deferred":
			return plainBool(v, &c.Deferred)
		case "changed_files":
			return plainStrings(v, &c.ChangedFiles)
		}
		return false
	})
}

// decodeTokens decodes a tokens object of plain integers; anything else
// goes through encoding/json.
func decodeTokens(val []byte, out **trace.Tokens) error {
	return decodePlainObject(val, out, func(t *trace.Tokens, key, v []byte) bool {
		switch string(key) {
		case "input":
			return plainInt(v, &t.Input)
		case "output":
			return plainInt(v, &t.Output)
		case "reasoning":
			return plainInt(v, &t.Reasoning)
		case "cache_read":
			return plainInt(v, &t.CacheRead)
		case "cache_write":
			return plainInt(v, &t.CacheWrite)
		}
		return false
	})
}

// decodePlainObject decodes the object val into *out field by field
// (field reports whether it took the key's plain value); an object field
// does not take goes through encoding/json. Like encoding/json, a second
// object for the same *out (a key repeated in the part) is decoded into
// the first.
func decodePlainObject[T any](val []byte, out **T, field func(t *T, key, v []byte) bool) error {
	var t T
	if *out != nil {
		t = **out
	}
	err := trace.ObjectFields(val, func(key, v []byte) error {
		if !field(&t, key, v) {
			return errSlowPart
		}
		return nil
	})
	if err != nil || !bytes.HasSuffix(val, []byte("}")) {
		return json.Unmarshal(val, out)
	}
	if *out == nil {
		*out = &t
	} else {
		**out = t
	}
	return nil
}

func plainBool(v []byte, b *bool) bool {
	switch string(v) {
	case "true":
		*b = true
	case "false":
		*b = false
	default:
		return false
	}
	return true
}

// plainInt sets n to a plain decimal integer (no sign, no leading zero,
// at most 17 digits).
func plainInt(v []byte, n *int64) bool {
	if len(v) == 0 || len(v) > 17 || (v[0] == '0' && len(v) > 1) {
		return false
	}
	var x int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
		x = x*10 + int64(c-'0')
	}
	*n = x
	return true
}
