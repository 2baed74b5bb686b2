package evalbox

// CollectArtifactsForTest is collectArtifacts, for the package's tests.
var CollectArtifactsForTest = collectArtifacts
