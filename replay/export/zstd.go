package export

import (
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// pageWindow is the zstd window the export's pages are compressed with.
// A Parquet page is a few hundred KB (a value is capped at ValueCap), so
// a larger window finds nothing more; parquet-go's own codec keeps the
// library's 8 MB window, whose history buffer (16 MB an encoder) was a
// third of an export's live heap and so set how far the heap grew.
const pageWindow = 1 << 20

// zstdCodec is parquet-go's ZSTD codec (same level, no checksum, an empty
// input as an empty frame) with pageWindow: for pages of up to pageWindow
// bytes it writes the same bytes. One codec serves every file of a Run;
// its encoder compresses on every core.
type zstdCodec struct {
	enc     *zstd.Encoder
	decOnce sync.Once
	dec     *zstd.Decoder
	decErr  error
}

func newZstdCodec() (*zstdCodec, error) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithZeroFrames(true),
		zstd.WithEncoderCRC(false),
		zstd.WithWindowSize(pageWindow),
	)
	if err != nil {
		return nil, err
	}
	return &zstdCodec{enc: enc}, nil
}

func (c *zstdCodec) String() string { return "ZSTD" }

func (c *zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	return c.enc.EncodeAll(src, dst[:0]), nil
}

// Decode is the codec interface's other half (the export reads no page).
func (c *zstdCodec) Decode(dst, src []byte) ([]byte, error) {
	c.decOnce.Do(func() { c.dec, c.decErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1)) })
	if c.decErr != nil {
		return nil, c.decErr
	}
	return c.dec.DecodeAll(src, dst[:0])
}
