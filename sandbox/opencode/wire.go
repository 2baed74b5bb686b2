package opencode

import "github.com/trajlab/traj/sandbox/opencode/wire"

// OpenCode's objects and what they mean to the agent port are package
// wire's, which readers of a trace import without the server (its Reader
// is the one recorded.Reader gives); the adapter uses the same types.
type (
	Session     = wire.Session
	SessionTime = wire.SessionTime
	Tokens      = wire.Tokens
	MessageInfo = wire.MessageInfo
	MessageTime = wire.MessageTime
	Message     = wire.Message
	Part        = wire.Part
	PartTime    = wire.PartTime
	ToolState   = wire.ToolState
)

// Part types OpenCode 1.18 emits and tool states (wire's).
const (
	PartText       = wire.PartText
	PartReasoning  = wire.PartReasoning
	PartTool       = wire.PartTool
	PartPatch      = wire.PartPatch
	PartStepStart  = wire.PartStepStart
	PartStepFinish = wire.PartStepFinish
	PartFile       = wire.PartFile
	PartSnapshot   = wire.PartSnapshot
	PartAgent      = wire.PartAgent
	PartSubtask    = wire.PartSubtask
	PartRetry      = wire.PartRetry
	PartCompaction = wire.PartCompaction

	ToolPending   = wire.ToolPending
	ToolRunning   = wire.ToolRunning
	ToolCompleted = wire.ToolCompleted
	ToolError     = wire.ToolError
)
