package model

import (
	"io"
	"regexp"

	"github.com/trajlab/traj/sandbox/gateway/model/calls"
)

// The record of model calls (model_calls.jsonl) and a recorded reply put
// back together are package calls', which readers of a trajectory import
// without the gateway; the gateway writes the same types.
type (
	Call      = calls.Call
	Digest    = calls.Digest
	Totals    = calls.Totals
	Reply     = calls.Reply
	ReplyCall = calls.ReplyCall
)

// MaxLineBytes and MaxCutString: calls.MaxLineBytes, calls.MaxCutString.
const (
	MaxLineBytes = calls.MaxLineBytes
	MaxCutString = calls.MaxCutString
)

// DigestOf is calls.DigestOf.
func DigestOf(body []byte, varying *regexp.Regexp) Digest { return calls.DigestOf(body, varying) }

// ReadRecord is calls.ReadRecord.
func ReadRecord(path string, fn func(Call) error) (Totals, error) { return calls.ReadRecord(path, fn) }

// ScanRecord is calls.ScanRecord.
func ScanRecord(r io.Reader, fn func(Call) error) (Totals, error) { return calls.ScanRecord(r, fn) }

// Assemble is calls.Assemble.
func Assemble(api string, body []byte) (Reply, bool) { return calls.Assemble(api, body) }
