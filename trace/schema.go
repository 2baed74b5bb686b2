package trace

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed schema/agent_trace.schema.json
var schemaJSON []byte

// SchemaURL is the $id of the trace JSON Schema.
const SchemaURL = "https://github.com/trajlab/traj/trace/schema/agent_trace.schema.json"

// SchemaJSON returns the JSON Schema (draft 2020-12) of agent_trace.json.
func SchemaJSON() []byte { return bytes.Clone(schemaJSON) }

// Schemas are the compiled trace schema and the sub-schemas the streaming
// validator applies one turn or part at a time.
type Schemas struct {
	Trace *jsonschema.Schema // the whole document
	Turn  *jsonschema.Schema // one turn (with any parts)
	Part  *jsonschema.Schema // one part
}

// compiledSchemas compiles the embedded schema once per process; the
// result is read-only and safe for concurrent use.
var compiledSchemas = sync.OnceValues(CompileSchemas)

// CompileSchemas compiles the embedded schema.
func CompileSchemas() (*Schemas, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("parse trace schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, fmt.Errorf("load trace schema: %w", err)
	}
	var s Schemas
	for _, x := range []struct {
		dst **jsonschema.Schema
		ref string
	}{{&s.Trace, ""}, {&s.Turn, "#/$defs/turn"}, {&s.Part, "#/$defs/part"}} {
		sch, err := c.Compile(SchemaURL + x.ref)
		if err != nil {
			return nil, fmt.Errorf("compile trace schema%s: %w", x.ref, err)
		}
		*x.dst = sch
	}
	return &s, nil
}
