package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Problem is one way a trace breaks the contract.
type Problem struct {
	Path    string `json:"path"`   // JSON path, e.g. $.turns[2].parts[0].part
	Offset  int64  `json:"offset"` // byte offset of a syntax error; -1 for other problems
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Offset >= 0 {
		return fmt.Sprintf("%s (byte offset %d): %s", p.Path, p.Offset, p.Message)
	}
	return p.Path + ": " + p.Message
}

// Validate checks a trace in one streaming pass: JSON syntax, valid UTF-8
// and no duplicate object keys, the schema (applied to each part and turn
// as it is read, so memory stays bounded), then the invariants: part
// indices 1..N without gaps across turns, each turn's part_start/part_end
// equal to its first/last part (null when it has none), a git_commit on
// every part, every commit a full hexadecimal object name, a
// trajectory_id usable as a folder name (ValidateID), and session_end
// totals matching the parts and turns. Problems come in that order
// (syntax, encoding and keys, schema, invariants), each in document order;
// nil means the trace is valid.
func Validate(r io.Reader) []Problem {
	s, err := compiledSchemas()
	if err != nil {
		return []Problem{{Path: "$", Offset: -1, Message: err.Error()}}
	}
	return s.Validate(r)
}

// Validate is Validate with already compiled schemas.
func (s *Schemas) Validate(r io.Reader) []Problem {
	v := validation{s: s, next: 1}
	capped := newStringCapper(r, MaxReadString)
	utf := newUTF8Checker(capped)
	err := walk(utf, walkHooks{part: v.part, turn: v.turn, end: v.end})
	var probs []Problem
	if err != nil {
		var se *ScanError
		if errors.As(err, &se) {
			probs = append(probs, Problem{Path: se.Path, Offset: se.Offset, Message: se.Err.Error()})
		} else {
			probs = append(probs, Problem{Path: "$", Offset: -1, Message: err.Error()})
		}
	}
	if utf.bad >= 0 {
		probs = append(probs, Problem{Path: "$", Offset: utf.bad, Message: "invalid UTF-8 (JSON text must be UTF-8; readers would replace these bytes)"})
	}
	probs = append(probs, v.keys...)
	probs = append(probs, v.schema...)
	probs = append(probs, v.invariants...)
	for i := range probs {
		probs[i].Offset = capped.inputOffset(probs[i].Offset)
	}
	return probs
}

// dupKeys records the duplicate keys of raw at path.
func (v *validation) dupKeys(path string, raw []byte) {
	for _, p := range duplicateKeys(path, raw) {
		v.keys = append(v.keys, Problem{Path: p, Offset: -1, Message: "duplicate key (JSON readers disagree on which value wins)"})
	}
}

// commit checks that a commit field holds a full object name.
func (v *validation) commit(path, c string) {
	if c != "" && !IsCommitHash(c) {
		v.invariant(path, "%q is not a commit hash (want 40 or 64 lowercase hexadecimal digits)", c)
	}
}

type validation struct {
	s                        *Schemas
	keys, schema, invariants []Problem

	next, nparts, nturns int // next expected part index; counts
	first, last          int // first/last part index of the current turn
	turnParts            int
	turnBad              bool // a part of the current turn has no readable index
	partTokens           Tokens
}

func (v *validation) addSchema(path string, sch *jsonschema.Schema, raw []byte) bool {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		v.schema = append(v.schema, Problem{Path: path, Offset: -1, Message: err.Error()})
		return false
	}
	err = sch.Validate(inst)
	if err == nil {
		return true
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		v.schema = append(v.schema, Problem{Path: path, Offset: -1, Message: err.Error()})
		return false
	}
	v.schema = append(v.schema, schemaProblems(path, ve)...)
	return false
}

// schemaProblems flattens a validation error to its leaf causes, each at
// its own instance path.
func schemaProblems(base string, ve *jsonschema.ValidationError) []Problem {
	printer := message.NewPrinter(language.English)
	var probs []Problem
	seen := map[string]bool{}
	var visit func(e *jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				visit(c)
			}
			return
		}
		p := Problem{Path: base + locationToPath(e.InstanceLocation), Offset: -1, Message: "schema: " + e.ErrorKind.LocalizedString(printer)}
		if k := p.Path + "\x00" + p.Message; !seen[k] {
			seen[k] = true
			probs = append(probs, p)
		}
	}
	visit(ve)
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Path < probs[j].Path })
	return probs
}

// locationToPath turns an instance location ([parts 0 part]) into a path
// suffix (.parts[0].part).
func locationToPath(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
		} else {
			b.WriteString("." + tok)
		}
	}
	return b.String()
}
func (v *validation) invariant(path, format string, args ...any) {
	v.invariants = append(v.invariants, Problem{Path: path, Offset: -1, Message: fmt.Sprintf(format, args...)})
}

func (v *validation) part(loc partLoc) error {
	path := loc.path()
	v.dupKeys(path, loc.raw)
	v.addSchema(path, v.s.Part, loc.raw)
	v.nparts++
	v.turnParts++
	var p struct {
		Part           *int    `json:"part"`
		GitCommit      *string `json:"git_commit"`
		RepoCheckpoint *struct {
			CommitBefore *string `json:"commit_before"`
			CommitAfter  *string `json:"commit_after"`
		} `json:"repo_checkpoint"`
		Tokens *Tokens `json:"tokens"`
	}
	if err := json.Unmarshal(loc.raw, &p); err != nil || p.Part == nil {
		v.turnBad = true // the schema problem says it; the range is unknown
		return nil
	}
	if p.GitCommit != nil {
		v.commit(path+".git_commit", *p.GitCommit)
	}
	if cp := p.RepoCheckpoint; cp != nil {
		if cp.CommitBefore != nil {
			v.commit(path+".repo_checkpoint.commit_before", *cp.CommitBefore)
		}
		if cp.CommitAfter != nil {
			v.commit(path+".repo_checkpoint.commit_after", *cp.CommitAfter)
		}
	}
	if p.Tokens != nil {
		v.partTokens.Add(*p.Tokens)
	}
	n := *p.Part
	if n != v.next {
		if n > v.next {
			v.invariant(path+".part", "part %d follows part %d: parts %d..%d are missing (indices must run 1..N without gaps)", n, v.next-1, v.next, n-1)
		} else {
			v.invariant(path+".part", "part %d follows part %d: indices must increase by one from 1", n, v.next-1)
		}
	}
	v.next = n + 1
	if loc.index == 0 {
		v.first = n
	}
	v.last = n
	if p.GitCommit != nil && *p.GitCommit == "" {
		v.invariant(path+".git_commit", "part %d has an empty git_commit", n)
	}
	return nil
}

func (v *validation) turn(loc turnLoc) error {
	path := loc.path()
	v.dupKeys(path, loc.raw)
	nparts, bad := v.turnParts, v.turnBad
	v.turnParts, v.turnBad = 0, false
	v.nturns++
	if !v.addSchema(path, v.s.Turn, loc.raw) {
		return nil
	}
	var t struct {
		Turn      int  `json:"turn"`
		PartStart *int `json:"part_start"`
		PartEnd   *int `json:"part_end"`
	}
	if err := json.Unmarshal(loc.raw, &t); err != nil || bad {
		return nil
	}
	check := func(field string, got *int, want int) {
		switch {
		case nparts == 0 && got != nil:
			v.invariant(path+"."+field, "turn %d has no parts, so %s must be null, not %d", t.Turn, field, *got)
		case nparts > 0 && got == nil:
			v.invariant(path+"."+field, "turn %d has parts %d..%d but %s is missing or null, want %d", t.Turn, v.first, v.last, field, want)
		case nparts > 0 && *got != want:
			v.invariant(path+"."+field, "turn %d has parts %d..%d but %s is %d, want %d", t.Turn, v.first, v.last, field, *got, want)
		}
	}
	check("part_start", t.PartStart, v.first)
	check("part_end", t.PartEnd, v.last)
	return nil
}

func (v *validation) end(loc docLoc) error {
	v.dupKeys("$", loc.raw)
	if !v.addSchema("$", v.s.Trace, loc.raw) {
		return nil
	}
	var t struct {
		TrajectoryID string `json:"trajectory_id"`
		SessionEnd   *struct {
			TotalParts     int           `json:"total_parts"`
			TotalTurns     int           `json:"total_turns"`
			FinalGitCommit *string       `json:"final_git_commit"`
			Tokens         *Tokens       `json:"tokens"`
			Unattributed   *Unattributed `json:"unattributed"`
		} `json:"session_end"`
	}
	if err := json.Unmarshal(loc.raw, &t); err != nil {
		return nil
	}
	if err := ValidateID(t.TrajectoryID); err != nil {
		v.invariant("$.trajectory_id", "%v", err)
	}
	if t.SessionEnd == nil {
		return nil
	}
	if c := t.SessionEnd.FinalGitCommit; c != nil {
		v.commit("$.session_end.final_git_commit", *c)
	}
	if t.SessionEnd.TotalParts != v.nparts {
		v.invariant("$.session_end.total_parts", "session_end.total_parts is %d but the trace has %d parts", t.SessionEnd.TotalParts, v.nparts)
	}
	if t.SessionEnd.TotalTurns != v.nturns {
		v.invariant("$.session_end.total_turns", "session_end.total_turns is %d but the trace has %d turns", t.SessionEnd.TotalTurns, v.nturns)
	}
	// The gateway's totals are the parts' shares and what no part claims.
	if e := t.SessionEnd; e.Unattributed != nil && e.Tokens != nil {
		sum := v.partTokens
		sum.Add(e.Unattributed.Tokens)
		if sum != *e.Tokens {
			v.invariant("$.session_end.unattributed", "the parts' tokens %+v plus unattributed %+v are %+v, but session_end.tokens is %+v",
				v.partTokens, e.Unattributed.Tokens, sum, *e.Tokens)
		}
	}
	return nil
}
