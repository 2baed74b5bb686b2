// Package s3 is a Store in an S3 bucket (AWS or any S3-compatible server)
// through aws-sdk-go-v2.
//
// Credentials come from the SDK's standard chain (environment, shared
// config and credentials files, SSO, web identity, container and EC2 roles);
// this package never logs or stores them.
//
// Large objects are sent with our own small multipart upload
// (CreateMultipartUpload, UploadPart, CompleteMultipartUpload, and
// AbortMultipartUpload on failure) instead of feature/s3/manager or
// feature/s3/transfermanager. manager is deprecated; transfermanager is
// pre-1.0 (its API may still change) and not otherwise needed. Owning the
// ~80 lines lets us state the checksum contract explicitly, which strict
// servers such as versitygw (like AWS) enforce: the upload is created with
// CRC32, every part carries its CRC32, and the completion lists each part's
// CRC32. Parts are read straight from a file (io.ReaderAt) when the source
// is one, otherwise through one part-sized buffer, so memory stays bounded.
// Single requests are retried by the SDK's standard retryer; whole
// operations by the retry wrapper around the Store.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/trajlab/traj/trace/store"
)

// Part sizes. S3 requires every part but the last to be at least 5 MiB.
const (
	MinPartSize     = 5 << 20
	DefaultPartSize = 16 << 20
	maxParts        = 10000
)

// Config selects a bucket, a key prefix inside it and how to reach it.
type Config struct {
	Bucket string
	// Prefix is prepended to every key; empty or ending with "/".
	Prefix string
	// Endpoint overrides the S3 endpoint (S3-compatible servers), e.g.
	// http://127.0.0.1:9000. Empty: the SDK's default, which also honours
	// AWS_ENDPOINT_URL_S3 and AWS_ENDPOINT_URL.
	Endpoint string
	// Region; empty: the SDK chain (AWS_REGION, profile), else us-east-1.
	Region string
	// PathStyle addresses the bucket in the path (http://host/bucket/key)
	// rather than the host name; most S3-compatible servers need it.
	PathStyle bool
	// PartSize is the multipart part size; objects up to this size are sent
	// with one PutObject. 0 means DefaultPartSize; at least MinPartSize.
	PartSize int64
	// Credentials overrides the standard chain (tests); nil uses the chain.
	Credentials aws.CredentialsProvider
}

// Store keeps objects in one bucket under a prefix.
type Store struct {
	client   *s3.Client
	bucket   string
	prefix   string
	partSize int64
}

var _ store.Store = (*Store)(nil)

// Open builds a client for cfg. It does not contact the server.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3 store: bucket is empty")
	}
	if cfg.Prefix != "" {
		if !strings.HasSuffix(cfg.Prefix, "/") {
			cfg.Prefix += "/"
		}
		if err := store.ValidateKey(strings.TrimSuffix(cfg.Prefix, "/")); err != nil {
			return nil, fmt.Errorf("s3 store prefix: %w", err)
		}
	}
	switch {
	case cfg.PartSize == 0:
		cfg.PartSize = DefaultPartSize
	case cfg.PartSize < MinPartSize:
		return nil, fmt.Errorf("s3 store: part size %d below the S3 minimum %d", cfg.PartSize, MinPartSize)
	}
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 store: load AWS config: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	return &Store{client: client, bucket: cfg.Bucket, prefix: cfg.Prefix, partSize: cfg.PartSize}, nil
}

// Client is the underlying S3 client (tests create buckets with it).
func (s *Store) Client() *s3.Client { return s.client }

// URI implements store.Store.
func (s *Store) URI(key string) string { return "s3://" + s.bucket + "/" + s.prefix + key }

func (s *Store) objectKey(key string) (string, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// digestMeta is the user metadata (x-amz-meta-sha256) Save gives every
// object: the SHA-256 of its content, which Stat returns so a sync can
// compare objects without downloading them (an ETag is no content digest
// for a multipart upload).
const digestMeta = "sha256"

// Save implements store.Store: one PutObject up to the part size, a
// multipart upload above it.
func (s *Store) Save(ctx context.Context, key string, src store.Source) error {
	okey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	sum, err := store.SourceDigest(src)
	if err != nil {
		return fmt.Errorf("save %s: %w", s.URI(key), store.Permanent(err)) // a retry cannot bring the source back
	}
	rc, size, err := src.Open()
	if err != nil {
		return fmt.Errorf("save %s: %w", s.URI(key), store.Permanent(err))
	}
	defer rc.Close()
	if size != sum.Size {
		return fmt.Errorf("save %s: source changed while read (%d bytes, then %d)", s.URI(key), sum.Size, size)
	}
	meta := map[string]string{digestMeta: sum.SHA256}
	if size > s.partSize {
		err = s.saveMultipart(ctx, okey, rc, size, meta)
	} else {
		err = s.savePut(ctx, okey, rc, size, meta)
	}
	if err != nil {
		return fmt.Errorf("save %s: %w", s.URI(key), classify(err))
	}
	return nil
}

func (s *Store) savePut(ctx context.Context, okey string, rc io.Reader, size int64, meta map[string]string) error {
	body, err := section(rc, 0, size, nil)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(okey),
		Body:              body,
		ContentLength:     aws.Int64(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		Metadata:          meta,
	})
	return err
}

// section returns a seekable reader over [off, off+n) of r: a section of the
// file when r is one, else the next n bytes read into buf. Seekable bodies
// let the SDK compute checksums and signatures and resend on retry.
func section(r io.Reader, off, n int64, buf []byte) (io.ReadSeeker, error) {
	if ra, ok := r.(io.ReaderAt); ok {
		return io.NewSectionReader(ra, off, n), nil
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read source at %d: %w", off, err)
	}
	return bytes.NewReader(buf), nil
}

func (s *Store) saveMultipart(ctx context.Context, okey string, rc io.Reader, size int64, meta map[string]string) error {
	partSize := s.partSize
	for (size+partSize-1)/partSize > maxParts {
		partSize *= 2
	}
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(okey),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		Metadata:          meta,
	})
	if err != nil {
		return fmt.Errorf("create multipart upload: %w", err)
	}
	uploadID := created.UploadId
	completed := false
	defer func() {
		if !completed {
			// Best effort, on a context that outlives a cancelled caller.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(s.bucket), Key: aws.String(okey), UploadId: uploadID,
			})
		}
	}()
	var buf []byte
	if _, ok := rc.(io.ReaderAt); !ok {
		buf = make([]byte, partSize)
	}
	var parts []types.CompletedPart
	for off, num := int64(0), int32(1); off < size; off, num = off+partSize, num+1 {
		n := min(partSize, size-off)
		body, err := section(rc, off, n, buf)
		if err != nil {
			return err
		}
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket:            aws.String(s.bucket),
			Key:               aws.String(okey),
			UploadId:          uploadID,
			PartNumber:        aws.Int32(num),
			Body:              body,
			ContentLength:     aws.Int64(n),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			return fmt.Errorf("upload part %d: %w", num, err)
		}
		parts = append(parts, types.CompletedPart{
			ETag: out.ETag, PartNumber: aws.Int32(num), ChecksumCRC32: out.ChecksumCRC32,
		})
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(s.bucket),
		Key:             aws.String(okey),
		UploadId:        uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return fmt.Errorf("complete multipart upload: %w", err)
	}
	completed = true
	return nil
}

// Load implements store.Store.
func (s *Store) Load(ctx context.Context, key string, fn func(io.Reader) error) error {
	okey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(okey)})
	if err != nil {
		return fmt.Errorf("load %s: %w", s.URI(key), classify(err))
	}
	defer out.Body.Close()
	return fn(out.Body)
}

// Stat implements store.Store.
func (s *Store) Stat(ctx context.Context, key string) (store.FileInfo, error) {
	okey, err := s.objectKey(key)
	if err != nil {
		return store.FileInfo{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(okey)})
	if err != nil {
		return store.FileInfo{}, fmt.Errorf("stat %s: %w", s.URI(key), classify(err))
	}
	return store.FileInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified),
		SHA256: out.Metadata[digestMeta]}, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix string, fn func(store.FileInfo) error) error {
	if err := store.ValidatePrefix(prefix); err != nil {
		return err
	}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", s.URI(prefix), classify(err))
		}
		for _, obj := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(obj.Key), s.prefix)
			if strings.HasSuffix(key, "/") {
				continue // folder marker some servers report
			}
			err := fn(store.FileInfo{Key: key, Size: aws.ToInt64(obj.Size), ModTime: aws.ToTime(obj.LastModified)})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Remove implements store.Store.
func (s *Store) Remove(ctx context.Context, key string) error {
	okey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(okey)})
	if err != nil {
		err = classify(err)
		if errors.Is(err, store.ErrNotFound) && !isBucketMissing(err) {
			return nil
		}
		return fmt.Errorf("remove %s: %w", s.URI(key), err)
	}
	return nil
}

// classify maps S3 errors onto the store's: missing keys to ErrNotFound,
// client errors a retry cannot fix (4xx other than timeout and throttling,
// missing credentials) to store.Permanent. Everything else stays retryable.
func classify(err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("%w: %w", store.ErrNotFound, err)
		case "NoSuchBucket":
			return store.Permanent(fmt.Errorf("%w: %w", store.ErrNotFound, err))
		case "SlowDown", "RequestTimeout", "Throttling", "ThrottlingException", "RequestTimeTooSkewed":
			return err
		}
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) {
		code := respErr.HTTPStatusCode()
		if code == http.StatusNotFound {
			return fmt.Errorf("%w: %w", store.ErrNotFound, err)
		}
		if code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests {
			return store.Permanent(err)
		}
	}
	var signErr *v4.SigningError
	if errors.As(err, &signErr) {
		return store.Permanent(err)
	}
	// No credentials from the chain (no variables, files or instance
	// role): the SDK reports it as "get identity: get credentials: …"
	// without a type of its own. Retrying cannot make credentials appear.
	if strings.Contains(err.Error(), "get identity: get credentials: ") {
		return store.Permanent(fmt.Errorf("no credentials for the store (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or an instance role): %w", err))
	}
	return err
}

func isBucketMissing(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchBucket"
}
