package evalbox

// CollectArtifactsForTest is collectArtifacts with the standard room's
// cap, for the package's tests.
func CollectArtifactsForTest(tree, dst string, names []string) (string, error) {
	return collectArtifacts(tree, dst, names, StandardRoom().ArtifactBytes)
}

// OnScratchForTest calls f with each evaluation's scratch image file ("":
// uncapped) before it is removed.
func OnScratchForTest(e *Evaluator, f func(image string)) { e.onScratch = f }
