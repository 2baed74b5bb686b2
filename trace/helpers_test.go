package trace_test

import (
	"io"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func jsonschemaUnmarshal(r io.Reader) (any, error) { return jsonschema.UnmarshalJSON(r) }
