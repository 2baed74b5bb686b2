package trace

// SavePartIndex writes ix to path as the writer keeps it (tests build a
// reference index from nothing with it).
func SavePartIndex(ix *PartIndex, path string) error { return ix.save(path) }
