package store

import "bytes"

// bytesReadCloser keeps *bytes.Reader's methods visible, io.ReaderAt among
// them: the S3 backend sends sections of a ReaderAt in place instead of
// copying the body into a part buffer (io.NopCloser would hide it).
type bytesReadCloser struct{ *bytes.Reader }

func (bytesReadCloser) Close() error { return nil }
