//go:build !linux

package replay

import "os"

// withMapped calls f with the bytes of the file at path (read: this
// platform has no mmap here).
func withMapped(path string, f func([]byte)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f(data)
	return nil
}
