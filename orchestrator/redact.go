package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/trajlab/traj/trace"
)

// Redacted replaces a secret value wherever it would reach the trace.
const Redacted = "[REDACTED]"

// minSecretLen: shorter values are not treated as secrets (redacting "1"
// or "us-east-1" would mangle the trace and protect nothing).
const minSecretLen = 8

// storeCredentialEnvs hold store credentials traj may have in its
// environment (the AWS credential chain). The agent never needs them.
var storeCredentialEnvs = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}

// storeSecrets returns the store credential values in the environment.
func storeSecrets(getenv func(string) string) []string {
	var out []string
	for _, k := range storeCredentialEnvs {
		if v := getenv(k); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// agentBaseEnv is traj's environment without store credentials: what the
// agent server (and every tool it runs) starts from.
func agentBaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(storeCredentialEnvs, k) {
			out = append(out, kv)
		}
	}
	return out
}

// redactor replaces secret values (the OpenCode server password, API
// keys, store credentials) in JSON. The agent can read them (a tool that
// prints its environment), so they must be scrubbed on the way into the
// trace, which is the one place everything the agent said is kept.
type redactor struct {
	old  [][]byte // each secret, raw and JSON-escaped
	repl []byte
}

func newRedactor(secrets []string) *redactor {
	r := &redactor{repl: []byte(Redacted)}
	seen := map[string]bool{}
	for _, s := range secrets {
		if len(s) < minSecretLen || seen[s] {
			continue
		}
		seen[s] = true
		r.old = append(r.old, []byte(s))
		if esc, err := json.Marshal(s); err == nil {
			if e := esc[1 : len(esc)-1]; !bytes.Equal(e, []byte(s)) {
				r.old = append(r.old, e)
			}
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	slices.SortFunc(r.old, func(a, b []byte) int { return len(b) - len(a) })
	return r
}

// bytes returns b with every secret replaced; b itself when none occurs.
func (r *redactor) bytes(b []byte) []byte {
	for _, s := range r.old {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, r.repl)
		}
	}
	return b
}

func (r *redactor) string(s string) string {
	for _, o := range r.old {
		s = strings.ReplaceAll(s, string(o), Redacted)
	}
	return s
}

func (r *redactor) raws(list []json.RawMessage) []json.RawMessage {
	for i, m := range list {
		list[i] = r.bytes(m)
	}
	return list
}

// redactingWriter scrubs secrets from everything the loop writes to the
// trace (and so from the chunks uploaded from it).
type redactingWriter struct {
	TraceWriter
	r *redactor
}

// redactTrace wraps w so no secret value reaches the trace.
func redactTrace(w TraceWriter, secrets []string) TraceWriter {
	r := newRedactor(secrets)
	if len(r.old) == 0 {
		return w
	}
	return &redactingWriter{TraceWriter: w, r: r}
}

func (w *redactingWriter) BeginTurn(t trace.TurnStart) error {
	t.Prompt = w.r.string(t.Prompt)
	return w.TraceWriter.BeginTurn(t)
}

// AppendPart redacts the whole record: raw server objects, prompt, tool
// results in envoi calls. The caller's record is rewritten in place, so
// what it publishes afterwards is clean too.
func (w *redactingWriter) AppendPart(p *trace.Part) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("redact part %d: %w", p.Part, err)
	}
	if clean := w.r.bytes(raw); !bytes.Equal(clean, raw) {
		var cp trace.Part
		if err := json.Unmarshal(clean, &cp); err != nil {
			return fmt.Errorf("redact part %d: %w", p.Part, err)
		}
		*p = cp
	}
	return w.TraceWriter.AppendPart(p)
}

func (w *redactingWriter) EndTurn(end trace.TurnEnd) error {
	end.TrailingParts = w.r.raws(end.TrailingParts)
	return w.TraceWriter.EndTurn(end)
}
