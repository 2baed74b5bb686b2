package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// Digest is an object's size and content digest (SHA-256, hex).
type Digest struct {
	Size   int64
	SHA256 string
}

// SourceDigest reads src once and returns its digest.
func SourceDigest(src Source) (Digest, error) {
	rc, size, err := src.Open()
	if err != nil {
		return Digest{}, err
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(rc, size))
	if err != nil {
		return Digest{}, fmt.Errorf("read source: %w", err)
	}
	if n != size {
		return Digest{}, fmt.Errorf("read source: %d of %d bytes", n, size)
	}
	return Digest{Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// ObjectDigest is the digest of the object at key: the backend's own when
// Stat has one (S3), else the file hashed in place (a local store), else
// the object loaded and hashed. It wraps ErrNotFound when key is missing.
// It is how a sync learns that an object is already there, unchanged.
func ObjectDigest(ctx context.Context, s Store, key string) (Digest, error) {
	fi, err := s.Stat(ctx, key)
	if err != nil {
		return Digest{}, err
	}
	if fi.SHA256 != "" {
		return Digest{Size: fi.Size, SHA256: fi.SHA256}, nil
	}
	if lp, ok := AsLocal(s); ok {
		if p, err := lp.LocalPath(key); err == nil {
			if _, err := os.Stat(p); err == nil {
				return SourceDigest(File(p))
			}
		}
	}
	var d Digest
	err = s.Load(ctx, key, func(r io.Reader) error {
		h := sha256.New()
		n, err := io.Copy(h, r)
		if err != nil {
			return err
		}
		d = Digest{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
		return nil
	})
	if err != nil {
		return Digest{}, fmt.Errorf("digest %s: %w", key, err)
	}
	return d, nil
}
