package replay

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// withMapped calls f with the bytes of the file at path, mapped read-only
// and populated in one call (no copy into the heap, no fault a page;
// valid only during f). A file cut while f reads
// it faults; that fault is returned as an error, not a crash.
func withMapped(path string, f func([]byte)) (err error) {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 || int64(int(fi.Size())) != fi.Size() {
		return fmt.Errorf("map %s: not a regular file with bytes", path)
	}
	data, err := syscall.Mmap(int(file.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("map %s: %w", path, err)
	}
	defer syscall.Munmap(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("read mapped %s: %v", path, r)
		}
	}()
	f(data)
	return nil
}
