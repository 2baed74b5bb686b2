package scripted

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validateArgs checks a scripted call's arguments against the JSON Schema
// the agent sent for that tool, so a misspelt argument (path for filePath)
// is reported against the script line instead of failing inside the agent.
func validateArgs(tool string, schema, args []byte) error {
	if len(bytes.TrimSpace(schema)) == 0 || string(bytes.TrimSpace(schema)) == "null" {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("tool %q: read its schema from the request: %w", tool, err)
	}
	url := "scripted:///" + tool + ".json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("tool %q: load its schema: %w", tool, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		// A schema we cannot compile is the agent's business, not a divergence.
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("tool %q: args: %w", tool, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("tool %q args do not match the schema the agent sent: %s", tool, flattenValidation(err))
	}
	return nil
}

// flattenValidation turns the library's indented, multi-line report into
// one line listing the leaf problems.
func flattenValidation(err error) string {
	lines := strings.Split(err.Error(), "\n")
	var leaves []string
	for _, l := range lines[1:] {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
		if l != "" {
			leaves = append(leaves, l)
		}
	}
	if len(leaves) == 0 {
		return lines[0]
	}
	return strings.Join(leaves, "; ")
}
