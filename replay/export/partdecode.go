package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/trajlab/traj/trace"
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
			return json.Unmarshal(val, &p.SessionIDs)
		case fNewMessages:
			return decodeRawList(val, &p.NewMessages)
		case fEnvoiCalls:
			if string(val) == "[]" {
				p.EnvoiCalls = []trace.EnvoiCall{}
				return nil
			}
			return json.Unmarshal(val, &p.EnvoiCalls)
		case fRepoCheckpoint:
			return json.Unmarshal(val, &p.RepoCheckpoint)
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
			return json.Unmarshal(val, &p.Tokens)
		case fCost:
			return json.Unmarshal(val, &p.Cost)
		case fGroundTruth:
			return json.Unmarshal(val, &p.GroundTruth)
		case fGatewayCalls:
			return json.Unmarshal(val, &p.GatewayCalls)
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
}

// decodeString takes a JSON string without escapes as it is; anything
// else (escapes, control bytes, invalid UTF-8, null, another type) goes
// through encoding/json.
func decodeString(val []byte, s *string) error {
	if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
		body := val[1 : len(val)-1]
		plain := true
		for _, c := range body {
			if c < 0x20 || c == '\\' || c == '"' || c >= utf8.RuneSelf {
				plain = false
				break
			}
		}
		if plain {
			*s = string(body)
			return nil
		}
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
	if len(val) > 0 && val[0] == '[' && json.Valid(val) {
		list := []json.RawMessage{}
		if trace.ArrayValues(val, func(v []byte) error { list = append(list, v); return nil }) == nil {
			*out = list
			return nil
		}
	}
	return json.Unmarshal(val, out)
}
