// Package localstack owns starting and stopping the local S3 stack: a versitygw
// gateway with the posix backend and object versioning, listening on loopback
// only. Tests and `make demo` use it in place of AWS S3.
package localstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
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
	// Attempts at picking a free port: another process may take the port
	// between our probe and versitygw binding it.
	portAttempts = 3
	logTailBytes = 8 << 10
)

// Options configures Start.
type Options struct {
	// Dir holds the gateway's data (data/, one subdirectory per bucket),
	// object versions (versions/) and its log (versitygw.log). It is kept
	// after Stop. Empty means a fresh temporary directory, removed on Stop.
	Dir string
}

// Stack is a running versitygw.
type Stack struct {
	endpoint string
	dir      string
	tempDir  bool
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{} // closed once the process has been reaped

	stopOnce sync.Once
	stopErr  error
}

// Start starts versitygw on a free 127.0.0.1 port and waits (at most 15 s, or
// until ctx ends) until it answers HTTP. The process outlives ctx: only Stop
// ends it.
//
// The binary is $ROCKLAKE_VERSITYGW, else $ROCKLAKE_CACHE/bin/versitygw
// (default cache $HOME/.cache/rocklake-migrate), else versitygw on PATH.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	bin, err := findBinary()
	if err != nil {
		return nil, err
	}
	dir, tempDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "rocklake-localstack-"); err != nil {
			return nil, fmt.Errorf("localstack: %w", err)
		}
		tempDir = true
	}
	s, err := start(ctx, bin, dir, tempDir)
	if err != nil && tempDir {
		_ = os.RemoveAll(dir)
	}
	return s, err
}

func start(ctx context.Context, bin, dir string, tempDir bool) (*Stack, error) {
	for _, sub := range []string{"data", "versions"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("localstack: %w", err)
		}
	}
	for attempt := 1; ; attempt++ {
		s, err := startOnce(ctx, bin, dir, tempDir)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == portAttempts {
			return s, err
		}
	}
}

var errPortTaken = errors.New("port already in use")

func startOnce(ctx context.Context, bin, dir string, tempDir bool) (*Stack, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("localstack: pick a port: %w", err)
	}
	logPath := filepath.Join(dir, "versitygw.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// Only the S3 port is given: the admin API, WebUI, website endpoint,
	// pprof and IAM service all stay off unless asked for.
	cmd := exec.Command(bin,
		"--port", addr,
		"--access", accessKey,
		"--secret", secretKey,
		"--region", region,
		// No --keep-alive: it buys nothing measurable on loopback, and idle
		// kept-alive connections hold up a graceful shutdown for seconds.
		"--quiet", // no per-request log lines
		"posix",
		"--versioning-dir", filepath.Join(dir, "versions"),
		filepath.Join(dir, "data"),
	)
	// versitygw reads most flags from VGW_* (and ROOT_*) variables too; a
	// minimal environment keeps a stray one from, say, opening an admin port
	// on all interfaces.
	cmd.Env = []string{"HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, // Stop signals the whole group
		// If this process dies without calling Stop (a test timeout panics
		// and exits), the gateway must not linger holding its port.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localstack: start %s: %w", bin, err)
	}
	s := &Stack{
		endpoint: "http://" + addr,
		dir:      dir,
		tempDir:  tempDir,
		logPath:  logPath,
		cmd:      cmd,
		exited:   make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()

	if err := s.waitReady(ctx); err != nil {
		s.kill()
		logs := s.Logs()
		if strings.Contains(logs, "address already in use") {
			err = fmt.Errorf("%w: %w", err, errPortTaken)
		}
		return nil, fmt.Errorf("localstack: versitygw on %s: %w\nversitygw log (%s):\n%s", addr, err, logPath, logs)
	}
	return s, nil
}

func findBinary() (string, error) {
	return FindTool("versitygw", "ROCKLAKE_VERSITYGW", "scripts/install-versitygw.sh")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls until the gateway answers any HTTP response (an unsigned
// request gets 403, which is enough to know it is serving).
func (s *Stack) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint+"/", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited before serving: %v", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not answering: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// Endpoint is the gateway's base URL, http://127.0.0.1:PORT.
func (s *Stack) Endpoint() string { return s.endpoint }

// AccessKey is the access key id the gateway accepts.
func (s *Stack) AccessKey() string { return accessKey }

// SecretKey is the secret access key the gateway accepts.
func (s *Stack) SecretKey() string { return secretKey }

// Dir is the directory holding the gateway's data, versions and log.
func (s *Stack) Dir() string { return s.dir }

// Env is the environment that points an S3 client at the gateway, as
// KEY=VALUE pairs to append to a child process's environment: the AWS SDKs,
// and through pkg/awsconfig this tool's engine, read AWS_ENDPOINT_URL;
// object_store in other programs (the rocklake binary) reads AWS_ENDPOINT,
// AWS_ALLOW_HTTP and AWS_VIRTUAL_HOSTED_STYLE_REQUEST (path-style requests,
// as the gateway has no virtual-host DNS). pkg/awsconfig implies path style
// whenever an endpoint is set.
func (s *Stack) Env() []string {
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
func (s *Stack) Logs() string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logTailBytes {
		_, _ = f.Seek(-logTailBytes, io.SeekEnd)
	}
	var b bytes.Buffer
	_, _ = b.ReadFrom(f)
	return b.String()
}

// CreateBucket creates a bucket, with object versioning enabled if versioned.
// A bucket that already exists (a persistent Dir) is not an error.
func (s *Stack) CreateBucket(ctx context.Context, name string, versioned bool) error {
	client := s.client()
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name})
	var ae smithy.APIError
	if err != nil && !(errors.As(err, &ae) && ae.ErrorCode() == "BucketAlreadyOwnedByYou") {
		return fmt.Errorf("localstack: create bucket %s: %w", name, err)
	}
	if !versioned {
		return nil
	}
	_, err = client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
		Bucket:                  &name,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	})
	if err != nil {
		return fmt.Errorf("localstack: enable versioning on %s: %w", name, err)
	}
	return nil
}

// Objects lists every object version and delete marker in every bucket,
// one line each ("bucket/key version etag size", latest marked), sorted: two
// listings are equal only if nothing was written, overwritten or deleted in
// between. A bucket that keeps no versions is listed by its objects.
func (s *Stack) Objects(ctx context.Context) ([]string, error) {
	client := s.client()
	buckets, err := client.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		return nil, fmt.Errorf("localstack: list buckets: %w", err)
	}
	var lines []string
	for _, b := range buckets.Buckets {
		name := aws.ToString(b.Name)
		lines = append(lines, "bucket "+name)
		p := s3.NewListObjectVersionsPaginator(client, &s3.ListObjectVersionsInput{Bucket: b.Name})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("localstack: list versions of %s: %w", name, err)
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

func (s *Stack) client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.endpoint),
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
		UsePathStyle: true,
	})
}

// Stop ends the gateway and everything in its process group: SIGTERM, then
// SIGKILL after 5 s. It waits for the process, removes the temporary
// directory if Start made one, and is safe to call more than once.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		s.signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(stopGrace):
			s.kill()
		}
		if s.tempDir {
			s.stopErr = os.RemoveAll(s.dir)
		}
	})
	return s.stopErr
}

// kill SIGKILLs the process group and waits for the process to be reaped.
func (s *Stack) kill() {
	s.signal(syscall.SIGKILL)
	<-s.exited
}

// signal signals the gateway's process group, unless the gateway has already
// been reaped: its pid, and so the group id, may then belong to someone else.
func (s *Stack) signal(sig syscall.Signal) {
	select {
	case <-s.exited:
	default:
		_ = syscall.Kill(-s.cmd.Process.Pid, sig)
	}
}
