package s3_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/trajlab/traj/trace/store"
	s3store "github.com/trajlab/traj/trace/store/s3"
	"github.com/trajlab/traj/trace/store/s3test"
	"github.com/trajlab/traj/trace/store/storetest"
)

// TestConformance runs the store suite against a real versitygw; 11 MiB
// objects with 5 MiB parts exercise the multipart path and its checksums.
func TestConformance(t *testing.T) {
	srv := s3test.Start(t)
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		cfg := srv.Config()
		cfg.PartSize = s3store.MinPartSize
		s, err := s3store.Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{LargeSize: 11 << 20})
}

// TestMultipartUpload proves objects above the part size go up in parts
// (the ETag of a multipart object ends in -<parts>) with CRC32 checksums
// versitygw accepted.
func TestMultipartUpload(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config()
	cfg.PartSize = s3store.MinPartSize
	s, err := s3store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), (2*s3store.MinPartSize+100)/16)
	if err := s.Save(context.Background(), "big", store.Bytes(data)); err != nil {
		t.Fatalf("save: %v", err)
	}
	head, err := s.Client().HeadObject(context.Background(), &s3.HeadObjectInput{
		Bucket: aws.String(cfg.Bucket), Key: aws.String(cfg.Prefix + "big"), ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		t.Fatal(err)
	}
	if etag := aws.ToString(head.ETag); !strings.HasSuffix(strings.Trim(etag, `"`), "-3") {
		t.Errorf("ETag %s: want a 3-part multipart ETag", etag)
	}
	if aws.ToString(head.ChecksumCRC32) == "" {
		t.Errorf("object has no CRC32 checksum")
	}
	if aws.ToInt64(head.ContentLength) != int64(len(data)) {
		t.Errorf("size %d, want %d", aws.ToInt64(head.ContentLength), len(data))
	}
}

// TestErrors checks that errors a retry cannot fix are marked permanent.
func TestErrors(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		mutate func(*s3store.Config)
	}{
		{"missing bucket", func(c *s3store.Config) { c.Bucket = "no-such-bucket" }},
		{"wrong secret", func(c *s3store.Config) {
			c.Credentials = credentials.NewStaticCredentialsProvider(srv.AccessKey, "wrong", "")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := srv.Config()
			c.mutate(&cfg)
			s, err := s3store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Save(ctx, "k", store.Bytes("x"))
			if err == nil || !store.IsPermanent(err) {
				t.Fatalf("save: got %v, want a permanent error", err)
			}
			if strings.Contains(err.Error(), srv.SecretKey) {
				t.Fatalf("error leaks the secret: %v", err)
			}
		})
	}
}

func TestParseURL(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		url     string
		env     map[string]string
		want    s3store.Config
		wantErr string
	}{
		{url: "s3://bucket", want: s3store.Config{Bucket: "bucket"}},
		{url: "s3://bucket/team/runs/", want: s3store.Config{Bucket: "bucket", Prefix: "team/runs/"}},
		{url: "s3://b/p?endpoint=http://127.0.0.1:9000&region=eu-west-1",
			want: s3store.Config{Bucket: "b", Prefix: "p/", Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", PathStyle: true}},
		{url: "s3://b?endpoint=http://h:1&path_style=false",
			want: s3store.Config{Bucket: "b", Endpoint: "http://h:1"}},
		{url: "s3://b", env: map[string]string{"TRAJ_S3_ENDPOINT": "https://s3.example"},
			want: s3store.Config{Bucket: "b", Endpoint: "https://s3.example", PathStyle: true}},
		{url: "s3://b", env: map[string]string{"AWS_ENDPOINT_URL_S3": "http://x:1"},
			want: s3store.Config{Bucket: "b", PathStyle: true}},
		{url: "s3://b?part_size=8388608", want: s3store.Config{Bucket: "b", PartSize: 8 << 20}},
		{url: "s3://b?part_size=1024", wantErr: "part_size"},
		{url: "s3://b?bogus=1", wantErr: `unknown parameter "bogus"`},
		{url: "s3://b?endpoint=ftp://x", wantErr: "not an http(s) URL"},
		{url: "s3://AK:SK@b/p", wantErr: "credentials do not belong"},
		{url: "s3:///p", wantErr: "want s3://BUCKET"},
		{url: "gs://b", wantErr: "want s3://BUCKET"},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			env = c.env
			got, err := s3store.ParseURL(c.url, getenv)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, c.wantErr)
				}
				if strings.Contains(err.Error(), "SK@") {
					t.Fatalf("error repeats the credentials: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
