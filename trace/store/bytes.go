package store

import "bytes"

type bytesReadCloser struct{ *bytes.Reader }

func (bytesReadCloser) Close() error { return nil }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
