// Package agent is the port between the recorder and an agent harness
// (OpenCode, Claude Code, Codex): the normalized events the orchestrator
// reads and the small Agent interface it drives. It is a leaf package:
// it imports nothing of traj's and holds no harness's JSON. Each adapter
// (sandbox/opencode, sandbox/claudecode, sandbox/codex) owns its harness's
// wire format and translates it into these types; nothing above an
// adapter parses a harness's objects.
//
// The vocabulary follows a multi-harness agent service's structured
// stream (init, text, thinking, tool_use, tool_result, error, done with
// usage), shaped by what the trace contract records.
//
// # What the orchestrator sees
//
// An adapter delivers, through Agent.Next, a stream of Events in the
// order the harness produced them:
//
//   - EventSession: a session exists or changed (Session: id, parent id,
//     the harness's object). The root session is the one the orchestrator
//     prompts; a sub-agent runs in a child session whose ParentID chain
//     reaches the root. Send it before the first message or part of that
//     session when you can; the recorder holds parts of unknown sessions
//     until their session joins the family, so a late session event is
//     not lost, but a session that never arrives leaves its parts
//     uncounted (they end up in the turn's trailing parts).
//   - EventMessage: a message exists or changed (Message: id, session,
//     role, Final). Parts of a user message are never counted; parts of an
//     assistant message are. Messages group parts the way the harness
//     does (OpenCode: one per model call; Claude Code: the API message id
//     of an assistant line; Codex: the turn).
//   - EventPart: a part was created or changed (Part). A part is counted
//     once, by id, the first time it is Done, its Kind is counted and its
//     message is an assistant message of the root session's family.
//     Resending a part that is already counted is harmless.
//   - EventStatus: a session became busy or idle. The turn is over when
//     the root session goes idle after having been busy; a child going
//     idle means nothing to the turn.
//   - EventError: the harness reported an error for a session (not one
//     caused by the recorder's own Abort: adapters drop those).
//   - EventResync: the adapter lost events (a dropped connection); the
//     orchestrator calls Snapshot to catch up.
//
// # Parts
//
// Kind is what trace records as part_type: KindText, KindReasoning,
// KindTool, KindPatch are counted (each is one part of the budget and a
// trace part); any other kind is the harness's own name for an object
// the recorder keeps verbatim but does not count (OpenCode's
// "step-start" and "step-finish", a user's prompt text is KindText of a
// user message and is not counted either). A tool part is Done when its
// result (or error) arrived: the adapter pairs a call with its result
// (Claude Code's tool_use block with the tool_result block of the
// following user line, Codex's item.started with item.completed) and
// sends one Part, its Tool filled. A file change the harness reports on
// its own (OpenCode's patch part, Codex's file_change item) is KindPatch.
// A sub-agent is a tool part whose Tool.ChildSessionID names the child
// session (OpenCode's task tool, Claude Code's Task tool); the child's
// own parts arrive in the child session (Claude Code: messages with
// parent_tool_use_id; an adapter may name the child session after that
// tool call id) and are counted like the root's.
//
// Raw is the harness's own object, verbatim: it becomes the trace part's
// content (counted) or an entry of other_parts / trailing_parts
// (uncounted). When an adapter builds one part from several harness
// objects (a tool call and its result), Raw is a JSON array of those
// objects in the order received, each verbatim; never re-encode a
// harness object you decoded. Sessions and messages are recorded with
// their Raw the same way (trace sessions and new_messages).
//
// # Usage
//
// Usage is attached to whatever object reports it: OpenCode's
// "step-finish" part (an uncounted Part carrying Usage), Claude Code's
// result line, Codex's turn.completed. Send a Part of an uncounted kind
// carrying the Usage and the verbatim object (for example Kind
// "result" or "turn.completed"); the recorder adds it to the next
// counted part (or the turn's trailing usage), so every token is counted
// once. Usage counts one model call or turn; never send cumulative
// totals twice.
//
// # Reconciliation
//
// Snapshot returns everything the harness holds for the root session
// and its descendants, in the same normalized types, as if each object
// had arrived again: the orchestrator diffs by id after each turn and
// after EventResync. A harness that cannot list its history (a CLI that
// only streams) returns what the adapter has seen so far; then nothing is
// lost because nothing was missed. Message.Final on the root session's
// last message tells the orchestrator the turn's exchange is over when
// the idle event itself was missed.
//
// # Reading a record back
//
// The trace keeps Raw only. Readers of a trace (show, view, report,
// export) get a part's neutral content — Kind, Text, Tool (name, call id,
// input, output, status, error, child session), Files, Title, times — and
// a message's model call (Message.Call) and a session's parent and title
// from the adapter's Reader (its wire package's reader.go), chosen by the
// trace's "agent" (sandbox/harness/recorded.Reader): the adapter that
// wrote an object is the one that reads it, with the same code it
// translated it with live, and no reader above sandbox/ parses a
// harness's objects. A CLI adapter's reader replays a part's recorded
// lines through its translator (ReplayPart, Lines). An adapter's objects,
// translation and Reader live in a package that starts nothing
// (sandbox/<harness>/wire), so a reader links no harness runtime.
//
// # Writing an adapter
//
// An adapter package starts the harness (as a sandbox service or a
// process per turn), creates or chooses the root session id (it may be
// synthetic, e.g. a UUID passed to `claude --session-id`, mapped to
// Codex's thread id once thread.started arrives), and returns a value
// implementing Agent. Prompt must return once the harness accepted the
// text (its events may still be running); Abort must make the root
// session go idle soon (the orchestrator waits a grace period for the
// idle event and keeps what arrives as trailing parts); Next must return
// ctx.Err() when ctx ends and an error wrapping ErrGone when the harness
// died. Give it a Reader (one value per harness version) in its wire
// package, registered in sandbox/harness/recorded (its start in
// sandbox/harness), that reads back every object it recorded, and fill
// Text, Files and the tool call on the parts it sends live too. See
// sandbox/opencode (Adapter) for a complete adapter and its tests.
package agent
