package wire

import (
	"encoding/json"

	"github.com/trajlab/traj/sandbox/agent"
)

// Normalize returns the session as the agent port sees it.
func (s Session) Normalize() agent.Session {
	return agent.Session{ID: s.ID, ParentID: s.ParentID, Title: s.Title, Version: s.Version, Raw: raw(s.Raw, s)}
}

// Normalize returns the message as the agent port sees it. Final: an
// assistant message that completed with an error or with a finish other
// than "tool-calls" (which means more model calls follow).
func (m MessageInfo) Normalize() agent.Message {
	out := agent.Message{ID: m.ID, SessionID: m.SessionID, Role: agent.Role(m.Role), Raw: raw(m.Raw, m)}
	if m.Role == "assistant" && m.Time.Completed != nil {
		out.Final = len(m.Error) > 0 && string(m.Error) != "null" || m.Finish != "" && m.Finish != "tool-calls"
	}
	if m.Role == "assistant" {
		c := &agent.ModelCall{Model: m.ModelID, Created: msTime(m.Time.Created), Finish: m.Finish}
		if m.ProviderID != "" && m.ModelID != "" {
			c.Model = m.ProviderID + "/" + m.ModelID
		}
		if m.Time.Completed != nil {
			c.Completed = msTime(*m.Time.Completed)
		}
		if m.Tokens != nil || m.Cost != 0 {
			c.Usage = m.Tokens.usage()
			c.Usage.Cost = m.Cost
		}
		if len(m.Error) > 0 && string(m.Error) != "null" {
			c.Error = string(m.Error)
		}
		out.Call = c
	}
	return out
}

// Normalize returns the part as the agent port sees it: its kind is
// OpenCode's part type (text, reasoning, tool and patch are counted;
// "step-start", "step-finish", … are kept uncounted), Done as the
// recorder counts it (text and reasoning once their end time is set, tool
// once completed or failed), a tool's call and result, and the usage of a
// "step-finish" part.
func (p Part) Normalize() agent.Part {
	out := agent.Part{ID: p.ID, SessionID: p.SessionID, MessageID: p.MessageID, Kind: agent.Kind(p.Type), Raw: raw(p.Raw, p),
		Text: p.Text, Files: p.Files}
	if p.Time != nil {
		out.Start, out.End = msTime(p.Time.Start), msTimePtr(p.Time.End)
	}
	switch p.Type {
	case PartText, PartReasoning:
		out.Done = p.Time != nil && p.Time.End != nil && *p.Time.End != 0
	case PartTool:
		out.Done = p.State != nil && (p.State.Status == ToolCompleted || p.State.Status == ToolError)
		out.Tool = &agent.ToolCall{Name: p.Tool, CallID: p.CallID, ChildSessionID: p.SubSessionID()}
		if st := p.State; st != nil {
			out.Tool.Status = agent.ToolStatus(st.Status)
			out.Tool.Input, out.Tool.Output, out.Tool.Error = st.Input, st.Output, st.Error
			md, mdErr := readMetadata(st.Metadata)
			if mdErr == nil && md.Truncated {
				out.Tool.OutputFile = md.OutputPath
			}
			out.Title = st.Title
			if st.Time != nil {
				out.Start, out.End = msTime(st.Time.Start), msTimePtr(st.Time.End)
			}
			if knownTool(p.Tool) {
				in, err := readToolInput(st.Input)
				if f := editedFile(p.Tool, in); f != "" {
					out.Files = []string{f}
				}
				if err == nil {
					out.Tool.Action = action(p.Tool, in)
				}
				if a := out.Tool.Action; a != nil && a.Kind == agent.ActionCommand && mdErr == nil {
					a.ExitCode = md.Exit
				}
			}
		}
	default:
		out.Done = true
	}
	if p.Type == PartStepFinish && (p.Tokens != nil || p.Cost != nil) {
		u := p.Tokens.usage()
		if p.Cost != nil {
			u.Cost = *p.Cost
		}
		out.Usage = u
	}
	return out
}

// raw returns the server's JSON for v, re-encoding only when it was not
// kept.
func raw(r json.RawMessage, v any) json.RawMessage {
	if len(r) > 0 {
		return r
	}
	b, _ := json.Marshal(v)
	return b
}
