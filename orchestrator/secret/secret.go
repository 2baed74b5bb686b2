// Package secret is the one place that knows which values are secrets in
// a run (store credentials, API keys, the harness's own secrets) and
// replaces them with Redacted wherever they would be recorded: every part,
// prompt and trailing part written to the trace, and service logs copied
// into the trajectory folder.
package secret

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
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

// StoreSecrets returns the store credential values in the environment.
func StoreSecrets(getenv func(string) string) []string {
	var out []string
	for _, k := range storeCredentialEnvs {
		if v := getenv(k); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Gather returns the secret values a run starts with: the store
// credentials in the environment and the values of the API-key variables
// named by apiKeyEnvs. The harness's own secrets (a server password) are
// added by whoever starts it.
func Gather(apiKeyEnvs []string, getenv func(string) string) []string {
	out := StoreSecrets(getenv)
	for _, name := range apiKeyEnvs {
		if v := getenv(name); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// CopyLogs copies the service logs in folder from into folder to, every
// secret redacted as in the trace. Problems are logged, not returned: the
// logs are a convenience, the trace is the record.
func CopyLogs(from, to string, secrets []string, log *slog.Logger) {
	ents, err := os.ReadDir(from)
	if err != nil {
		return
	}
	r := NewRedactor(secrets)
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			log.Warn("copy log", "file", e.Name(), "err", err)
			continue
		}
		b, _ = r.Bytes(b)
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			log.Warn("copy log", "file", e.Name(), "err", err)
		}
	}
}

// Redactor replaces secret values (the OpenCode server password, API
// keys, store credentials) in the trace and in copied logs. The agent can
// read them (a tool that prints its environment), so they must be scrubbed
// on the way into the trace, which is the one place everything the agent
// said is kept.
type Redactor struct {
	old  [][]byte // each secret: raw, and as it looks inside a JSON string
	repl []byte
}

// NewRedactor redacts secrets (values shorter than 8 bytes are ignored).
func NewRedactor(secrets []string) *Redactor {
	r := &Redactor{repl: []byte(Redacted)}
	seen := map[string]bool{}
	add := func(b []byte) {
		if !seen[string(b)] {
			seen[string(b)] = true
			r.old = append(r.old, b)
		}
	}
	for _, s := range secrets {
		if len(s) < minSecretLen {
			continue
		}
		add([]byte(s))
		// Inside JSON: escaped with and without HTML escaping (servers
		// differ; the trace writer does not escape HTML).
		for _, html := range []bool{true, false} {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(s); err == nil {
				esc := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
				add(esc[1 : len(esc)-1])
			}
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	slices.SortFunc(r.old, func(a, b []byte) int { return len(b) - len(a) })
	return r
}

// Bytes returns b with every secret replaced, and whether one was; b
// itself when none occurs.
func (r *Redactor) Bytes(b []byte) ([]byte, bool) {
	changed := false
	for _, s := range r.old {
		if bytes.Contains(b, s) {
			b, changed = bytes.ReplaceAll(b, s, r.repl), true
		}
	}
	return b, changed
}

func (r *Redactor) string(s string) (string, bool) {
	changed := false
	for _, o := range r.old {
		if strings.Contains(s, string(o)) {
			s, changed = strings.ReplaceAll(s, string(o), Redacted), true
		}
	}
	return s, changed
}

// each applies f to every element of list, and reports whether any
// changed; the list is copied on the first change, so the caller's backing
// array is never written.
func each[T any](list []T, f func(T) (T, bool)) ([]T, bool) {
	out, changed := list, false
	for i, v := range list {
		if c, ch := f(v); ch {
			if !changed {
				out, changed = slices.Clone(list), true
			}
			out[i] = c
		}
	}
	return out, changed
}

func (r *Redactor) raw(m json.RawMessage) (json.RawMessage, bool) { return r.Bytes(m) }

// scrub redacts fields in place and remembers whether any changed.
type scrub struct {
	r       *Redactor
	changed bool
}

func (s *scrub) str(p *string) {
	var ch bool
	*p, ch = s.r.string(*p)
	s.changed = s.changed || ch
}

func (s *scrub) raw(p *json.RawMessage) {
	var ch bool
	*p, ch = s.r.raw(*p)
	s.changed = s.changed || ch
}

func (s *scrub) strs(p *[]string) {
	var ch bool
	*p, ch = each(*p, s.r.string)
	s.changed = s.changed || ch
}

func (s *scrub) raws(p *[]json.RawMessage) {
	var ch bool
	*p, ch = each(*p, s.r.raw)
	s.changed = s.changed || ch
}

// Part returns p with every secret in its strings and raw JSON replaced
// (the marshalled part is scanned nowhere: the writer marshals it once).
// p is a copy: the caller's part, and the slices and records it points
// to, are never written; a changed slice or record is copied first.
func (r *Redactor) Part(p trace.Part) trace.Part {
	if len(r.old) == 0 {
		return p
	}
	s := &scrub{r: r}
	for _, f := range []*string{&p.Timestamp, &p.Prompt, &p.MessageID, &p.GitCommit, &p.SessionID, &p.PartID, &p.PartType, &p.Tool} {
		s.str(f)
	}
	s.raw(&p.Content)
	s.raws(&p.Sessions)
	s.raws(&p.NewMessages)
	s.raws(&p.OtherParts)
	s.strs(&p.SessionIDs)
	p.EnvoiCalls, _ = each(p.EnvoiCalls, func(c trace.EnvoiCall) (trace.EnvoiCall, bool) {
		cs := &scrub{r: r}
		cs.str(&c.Path)
		cs.str(&c.Timestamp)
		cs.str(&c.CallID)
		cs.str(&c.ToolCallID)
		cs.raw(&c.Result)
		if c.Error != nil {
			e := *c.Error
			cs.str(&e)
			c.Error = &e
		}
		return c, cs.changed
	})
	p.GatewayCalls = r.GatewayCalls(p.GatewayCalls)
	p.GroundTruth, _ = each(p.GroundTruth, func(g trace.GroundTruth) (trace.GroundTruth, bool) {
		gs := &scrub{r: r}
		for _, f := range []*string{&g.Commit, &g.Tree, &g.Timestamp, &g.CacheKey, &g.Key, &g.Artifact, &g.KeyWhy, &g.Error} {
			gs.str(f)
		}
		g.Suites, _ = each(g.Suites, func(c trace.SuiteCount) (trace.SuiteCount, bool) {
			cs := &scrub{r: r}
			cs.str(&c.Path)
			gs.changed = gs.changed || cs.changed
			return c, cs.changed
		})
		return g, gs.changed
	})
	if p.ModelCall != nil {
		c := *p.ModelCall
		cs := &scrub{r: r}
		cs.str(&c.Model)
		cs.str(&c.Join)
		if cs.changed {
			p.ModelCall = &c
		}
	}
	if p.RepoCheckpoint != nil {
		c := *p.RepoCheckpoint
		cs := &scrub{r: r}
		cs.str(&c.CommitBefore)
		cs.str(&c.CommitAfter)
		cs.strs(&c.ChangedFiles)
		cs.str(&c.AgentGitHead)
		c.StubbedFiles, _ = each(c.StubbedFiles, func(f trace.StubbedFile) (trace.StubbedFile, bool) {
			fs := &scrub{r: r}
			fs.str(&f.Path)
			fs.str(&f.SHA256)
			cs.changed = cs.changed || fs.changed
			return f, fs.changed
		})
		if cs.changed {
			p.RepoCheckpoint = &c
		}
	}
	return p
}

// Text returns s with every secret replaced (a turn's prompt).
func (r *Redactor) Text(s string) string {
	s, _ = r.string(s)
	return s
}

// Raws returns list with every secret replaced (a turn's trailing
// parts); the list given is not changed.
func (r *Redactor) Raws(list []json.RawMessage) []json.RawMessage {
	out, _ := each(list, r.raw)
	return out
}

// GatewayCalls returns calls with every secret replaced (a part's and
// session_end's tool gateway calls); the slice given is not changed.
func (r *Redactor) GatewayCalls(calls []trace.GatewayCall) []trace.GatewayCall {
	out, _ := each(calls, func(c trace.GatewayCall) (trace.GatewayCall, bool) {
		cs := &scrub{r: r}
		for _, f := range []*string{&c.ToolCallID, &c.Tool, &c.Start, &c.Text} {
			cs.str(f)
		}
		cs.raw(&c.Arguments)
		return c, cs.changed
	})
	return out
}
