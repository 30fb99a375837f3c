// Package s3server runs the tests' S3: a versitygw gateway with the posix
// backend and object versioning, listening on 127.0.0.1 only (Launch), for
// one test (Start), for a package's tests (Main), or for `make demo`
// (cmd/run-local-s3). It also holds the S3 faults tests put in front of it:
// an endpoint that never answers (StartBlackHole) and a proxy whose responses
// stall half-way (StartStallProxy).
package s3server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/rocklake/rocklake-migrate/internal/testenv/proc"
)

// Fixed credentials: the gateway is private to one run on loopback, so there
// is nothing to protect, and fixed values make failing runs easy to reproduce.
const (
	accessKey = "rocklake-local"
	secretKey = "rocklake-local-secret"
	region    = "us-east-1"
)

const (
	readyTimeout = 15 * time.Second
	stopGrace    = 5 * time.Second
	logTail      = 8 << 10
)

// Options configures Launch.
type Options struct {
	// Dir holds the gateway's data (data/, one subdirectory per bucket),
	// object versions (versions/) and its log (versitygw.log). It is kept
	// after Stop. Empty means a fresh temporary directory, removed on Stop.
	Dir string
}

// Server is a running versitygw.
type Server struct {
	endpoint string
	dir      string
	tempDir  bool
	proc     *proc.Process
}

// Launch starts versitygw on a free 127.0.0.1 port and waits (at most 15 s,
// or until ctx ends) until it answers HTTP. The process outlives ctx: only
// Stop ends it.
//
// The binary is $ROCKLAKE_VERSITYGW, else $ROCKLAKE_CACHE/bin/versitygw
// (default cache $HOME/.cache/rocklake-migrate), else versitygw on PATH.
func Launch(ctx context.Context, opts Options) (*Server, error) {
	bin, err := proc.FindTool("versitygw", "ROCKLAKE_VERSITYGW", "scripts/install-versitygw.sh")
	if err != nil {
		return nil, err
	}
	dir, tempDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "rocklake-s3server-"); err != nil {
			return nil, fmt.Errorf("s3server: %w", err)
		}
		tempDir = true
	}
	s, err := launch(ctx, bin, dir, tempDir)
	if err != nil && tempDir {
		_ = os.RemoveAll(dir)
	}
	return s, err
}

func launch(ctx context.Context, bin, dir string, tempDir bool) (*Server, error) {
	for _, sub := range []string{"data", "versions"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("s3server: %w", err)
		}
	}
	logPath := filepath.Join(dir, "versitygw.log")
	// A restarted gateway on a kept Dir starts a fresh log.
	if err := os.Remove(logPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("s3server: %w", err)
	}
	p, err := proc.Start(ctx, proc.Spec{
		Name: "versitygw",
		Path: bin,
		// Only the S3 port is given: the admin API, WebUI, website
		// endpoint, pprof and IAM service all stay off unless asked for.
		Args: func(addr string) ([]string, error) {
			return []string{
				"--port", addr,
				"--access", accessKey,
				"--secret", secretKey,
				"--region", region,
				// No --keep-alive: it buys nothing measurable on loopback,
				// and idle kept-alive connections hold up a graceful
				// shutdown for seconds.
				"--quiet", // no per-request log lines
				"posix",
				"--versioning-dir", filepath.Join(dir, "versions"),
				filepath.Join(dir, "data"),
			}, nil
		},
		// versitygw reads most flags from VGW_* (and ROOT_*) variables too;
		// a minimal environment keeps a stray one from, say, opening an
		// admin port on all interfaces.
		Env:          []string{"HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()},
		LogFile:      logPath,
		LogTail:      logTail,
		Ready:        proc.HTTPReady("/", nil), // any response (an unsigned request gets 403): the gateway serves
		ReadyTimeout: readyTimeout,
		StopGrace:    stopGrace,
	})
	if err != nil {
		return nil, fmt.Errorf("s3server: %w", err)
	}
	return &Server{endpoint: "http://" + p.Addr(), dir: dir, tempDir: tempDir, proc: p}, nil
}

// Endpoint is the gateway's base URL, http://127.0.0.1:PORT.
func (s *Server) Endpoint() string { return s.endpoint }

// AccessKey is the access key id the gateway accepts.
func (s *Server) AccessKey() string { return accessKey }

// SecretKey is the secret access key the gateway accepts.
func (s *Server) SecretKey() string { return secretKey }

// Dir is the directory holding the gateway's data, versions and log.
func (s *Server) Dir() string { return s.dir }

// Env is the environment that points an S3 client at the gateway, as
// KEY=VALUE pairs to append to a child process's environment: the AWS SDKs,
// and through pkg/awsconfig this tool's engine, read AWS_ENDPOINT_URL;
// object_store in other programs (the rocklake binary) reads AWS_ENDPOINT,
// AWS_ALLOW_HTTP and AWS_VIRTUAL_HOSTED_STYLE_REQUEST (path-style requests,
// as the gateway has no virtual-host DNS). pkg/awsconfig implies path style
// whenever an endpoint is set.
func (s *Server) Env() []string {
	return []string{
		"AWS_ENDPOINT=" + s.endpoint,
		"AWS_ENDPOINT_URL=" + s.endpoint,
		"AWS_ALLOW_HTTP=true",
		"AWS_VIRTUAL_HOSTED_STYLE_REQUEST=false",
		"AWS_REGION=" + region,
		"AWS_DEFAULT_REGION=" + region,
		"AWS_ACCESS_KEY_ID=" + accessKey,
		"AWS_SECRET_ACCESS_KEY=" + secretKey,
	}
}

// Logs returns the tail of the gateway's stdout and stderr, for diagnostics.
func (s *Server) Logs() string { return s.proc.Logs() }

// CreateBucket creates a bucket, with object versioning enabled if versioned.
// A bucket that already exists (a persistent Dir) is not an error.
func (s *Server) CreateBucket(ctx context.Context, name string, versioned bool) error {
	client := s.client()
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name})
	var ae smithy.APIError
	if err != nil && !(errors.As(err, &ae) && ae.ErrorCode() == "BucketAlreadyOwnedByYou") {
		return fmt.Errorf("s3server: create bucket %s: %w", name, err)
	}
	if !versioned {
		return nil
	}
	_, err = client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
		Bucket:                  &name,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	})
	if err != nil {
		return fmt.Errorf("s3server: enable versioning on %s: %w", name, err)
	}
	return nil
}

// Objects lists every object version and delete marker in every bucket,
// one line each ("bucket/key version etag size", latest marked), sorted: two
// listings are equal only if nothing was written, overwritten or deleted in
// between. A bucket that keeps no versions is listed by its objects.
func (s *Server) Objects(ctx context.Context) ([]string, error) {
	client := s.client()
	buckets, err := client.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		return nil, fmt.Errorf("s3server: list buckets: %w", err)
	}
	var lines []string
	for _, b := range buckets.Buckets {
		name := aws.ToString(b.Name)
		lines = append(lines, "bucket "+name)
		p := s3.NewListObjectVersionsPaginator(client, &s3.ListObjectVersionsInput{Bucket: b.Name})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("s3server: list versions of %s: %w", name, err)
			}
			for _, v := range page.Versions {
				lines = append(lines, fmt.Sprintf("%s/%s %s %s %d latest=%v", name, aws.ToString(v.Key), aws.ToString(v.VersionId),
					aws.ToString(v.ETag), aws.ToInt64(v.Size), aws.ToBool(v.IsLatest)))
			}
			for _, m := range page.DeleteMarkers {
				lines = append(lines, fmt.Sprintf("%s/%s %s delete-marker latest=%v", name, aws.ToString(m.Key), aws.ToString(m.VersionId), aws.ToBool(m.IsLatest)))
			}
		}
	}
	sort.Strings(lines)
	return lines, nil
}

func (s *Server) client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.endpoint),
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
		UsePathStyle: true,
	})
}

// Stop ends the gateway and everything in its process group: SIGTERM, then
// SIGKILL after 5 s. It waits for the process, removes the temporary
// directory if Launch made one, and is safe to call more than once. A
// gateway that had exited by itself is an error; one that had to be killed
// is not (its data is on disk either way).
func (s *Server) Stop() error {
	err := s.proc.Stop()
	if errors.Is(err, proc.ErrKilled) {
		err = nil
	}
	if s.tempDir {
		if rmErr := os.RemoveAll(s.dir); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("s3server: %w", rmErr))
		}
	}
	return err
}
