package scripted

// estimateUsage derives token counts from byte lengths (about four bytes a
// token), so the same script and requests always report the same usage.
func estimateUsage(requestBody []byte, rep reply) Usage {
	completion := len(rep.reasoning) + len(rep.text)
	for _, tc := range rep.tools {
		completion += len(tc.Name) + len(tc.Args)
	}
	u := Usage{
		PromptTokens:     tokens(len(requestBody)),
		CompletionTokens: tokens(completion),
		ReasoningTokens:  tokens(len(rep.reasoning)),
	}
	if u.ReasoningTokens > u.CompletionTokens {
		u.ReasoningTokens = u.CompletionTokens
	}
	return u
}

func tokens(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + 3) / 4
}
