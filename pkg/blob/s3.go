package blob

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	tm "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
)

const (
	// A request S3 answered with a retryable error (throttling, a 5xx) is
	// tried this often; one it did not answer, only Limits.Attempts times.
	maxAttempts = 5
	maxBackoff  = 5 * time.Second
	// Two parts in flight: with 8 MiB parts an upload holds about 24 MiB,
	// which keeps many concurrent shard writers within a Lambda's memory.
	uploadConcurrency = 2
	// How long aborting a failed multipart upload may take once the
	// caller's ctx is gone; without it the parts would stay behind.
	abortTimeout = 30 * time.Second
	// DeleteObjects takes at most 1000 keys.
	deleteBatch = 1000
)

type s3Store struct {
	client   *s3.Client
	transfer *tm.Client
	endpoint string // for error messages: the custom endpoint, or AWS S3 in its region
	limits   awsconfig.Limits
}

func newS3Store(ctx context.Context) (*s3Store, error) {
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(cfg.AWS, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		r := retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.MaxBackoff = maxBackoff
		})
		// S3 answers 409 ConditionalRequestConflict to a conditional
		// write racing another on the same key, and asks for a retry.
		o.Retryer = retry.AddWithErrorCodes(cfg.Limits.Retryer(r), "ConditionalRequestConflict")
	})
	transfer := tm.New(client, func(o *tm.Options) {
		o.Concurrency = uploadConcurrency
		o.FailTimeout = abortTimeout
	})
	return &s3Store{client: client, transfer: transfer, endpoint: cfg.Describe(), limits: cfg.Limits}, nil
}

// error names what went wrong talking to S3: the package's named error,
// and for network failures the cause (no answer within which limit, timed
// out, refused, unresolvable, no credentials) and the endpoint, instead of
// the SDK's chain.
func (s *s3Store) error(err error) error {
	if err == nil {
		return nil
	}
	var dns *net.DNSError
	var ne net.Error
	var noCreds *awsconfig.NoCredentialsError
	silence, silent := s.limits.NoAnswer(err)
	switch {
	case errors.As(err, &noCreds):
		// The same message the engine gives (pkg/slatedb), not the SDK's chain.
		return fmt.Errorf("%w (endpoint %s)", noCreds, s.endpoint)
	case errors.As(err, &dns):
		return fmt.Errorf("%w: cannot resolve %s (endpoint %s): %w", ErrUnreachable, dns.Name, s.endpoint, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w: connection refused by %s: %w", ErrUnreachable, s.endpoint, err)
	case silent && errors.Is(err, awsconfig.ErrSilentAttempts):
		// Every attempt the limits allow went unanswered.
		return fmt.Errorf("%w: %s did not answer, %s: %w", ErrSilent, s.endpoint, silence, err)
	case silent:
		// One stall of a streamed body, which nothing here reads again:
		// the caller's retry may.
		return fmt.Errorf("%w: %s did not answer, %s: %w", ErrUnreachable, s.endpoint, silence, err)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: timed out talking to %s: %w", ErrUnreachable, s.endpoint, err)
	}
	return s3Error(err)
}

// s3Error adds the package's named error that matches err, if any.
func s3Error(err error) error {
	if err == nil {
		return nil
	}
	var named error
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NoSuchVersion":
			named = ErrNotFound
		case "NoSuchBucket":
			named = ErrNoSuchBucket
		case "PreconditionFailed":
			named = ErrPreconditionFailed
		case "NotModified":
			named = ErrNotModified
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken":
			named = ErrAccessDenied
		}
	}
	// Servers other than S3 may answer 404 or 412 with a code of their own.
	var re *awshttp.ResponseError
	if named == nil && errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotFound:
			named = ErrNotFound
		case http.StatusPreconditionFailed:
			named = ErrPreconditionFailed
		case http.StatusNotModified:
			named = ErrNotModified
		case http.StatusForbidden:
			named = ErrAccessDenied
		}
	}
	if named == nil {
		return err
	}
	return fmt.Errorf("%w: %w", named, err)
}

func (l Location) child(key string) string { return "s3://" + l.Bucket + "/" + key }

func (s *s3Store) open(ctx context.Context, l Location, versionID string) (io.ReadCloser, Info, error) {
	in := &s3.GetObjectInput{Bucket: &l.Bucket, Key: &l.Key}
	if versionID != "" {
		in.VersionId = &versionID
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, Info{}, s.error(err)
	}
	return namedBody{ReadCloser: out.Body, s: s}, Info{
		URL:          l.String(),
		Size:         aws.ToInt64(out.ContentLength),
		ETag:         aws.ToString(out.ETag),
		VersionID:    aws.ToString(out.VersionId),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

// namedBody names its read errors as every other S3 error is named: a body
// that stalls is ErrUnreachable naming the endpoint and the limit.
type namedBody struct {
	io.ReadCloser
	s *s3Store
}

func (b namedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = b.s.error(err)
	}
	return n, err
}

// get reads a whole small object. A body that stalls is read again from
// the start, up to Limits.Attempts reads in all (the SDK retries only until
// the headers; a streamed body is the caller's).
func (s *s3Store) get(ctx context.Context, l Location, versionID string) ([]byte, Info, error) {
	for attempt := 1; ; attempt++ {
		r, info, err := s.open(ctx, l, versionID)
		if err != nil {
			return nil, Info{}, err
		}
		body, err := readSmall(r)
		r.Close()
		var stall *awsconfig.StallError
		if errors.As(err, &stall) && attempt >= s.limits.Attempts {
			return body, info, fmt.Errorf("%w: %s stalled %d reads in a row: %w", ErrSilent, l, attempt, err)
		}
		if err == nil || !errors.As(err, &stall) || ctx.Err() != nil {
			return body, info, err
		}
	}
}

func (s *s3Store) getIfNoneMatch(ctx context.Context, l Location, etag string) ([]byte, Info, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &l.Bucket, Key: &l.Key, IfNoneMatch: &etag})
	if err != nil {
		return nil, Info{}, s.error(err)
	}
	defer out.Body.Close()
	body, err := readSmall(namedBody{ReadCloser: out.Body, s: s})
	return body, Info{
		URL:          l.String(),
		Size:         aws.ToInt64(out.ContentLength),
		ETag:         aws.ToString(out.ETag),
		VersionID:    aws.ToString(out.VersionId),
		LastModified: aws.ToTime(out.LastModified),
	}, err
}

func (s *s3Store) put(ctx context.Context, l Location, body []byte, cond condition) (Info, error) {
	in := &s3.PutObjectInput{
		Bucket:        &l.Bucket,
		Key:           &l.Key,
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	}
	if cond.ifMatch != "" {
		in.IfMatch = &cond.ifMatch
	}
	if cond.ifAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		return Info{}, s.error(err)
	}
	return Info{
		URL:       l.String(),
		Size:      int64(len(body)),
		ETag:      aws.ToString(out.ETag),
		VersionID: aws.ToString(out.VersionId),
	}, nil
}

func (s *s3Store) create(ctx context.Context, l Location) (*Writer, error) {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s.transfer.UploadObject(ctx, &tm.UploadObjectInput{Bucket: &l.Bucket, Key: &l.Key, Body: pr})
		// Unblocks a Write waiting on a failed upload, with the reason,
		// named (a silent endpoint is ErrUnreachable there too).
		err = s.error(err)
		pr.CloseWithError(cmp.Or(err, io.ErrClosedPipe))
		done <- err
	}()
	return &Writer{
		w: pw,
		commit: func() error {
			defer cancel()
			pw.Close() // EOF: the uploader sends the last part and completes
			return <-done
		},
		abort: func() {
			// A read error makes the uploader abort its multipart upload
			// (or never send a single-part one); cancel stops a request
			// in flight.
			pw.CloseWithError(errors.New("write aborted"))
			cancel()
			<-done
		},
	}, nil
}

// pager is a listing's paginator (ListObjectsV2, ListObjectVersions).
type pager[T any] interface {
	HasMorePages() bool
	NextPage(context.Context, ...func(*s3.Options)) (T, error)
}

// eachPage calls f on every page of p in turn; an error of a request, as
// the store's error, or of f ends it.
func eachPage[T any](ctx context.Context, s *s3Store, p pager[T], f func(T) error) error {
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s.error(err)
		}
		if err := f(page); err != nil {
			return err
		}
	}
	return nil
}

func (s *s3Store) list(ctx context.Context, prefix Location) ([]Info, error) {
	var infos []Info
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &prefix.Bucket, Prefix: &prefix.Key})
	err := eachPage(ctx, s, p, func(page *s3.ListObjectsV2Output) error {
		for _, o := range page.Contents {
			infos = append(infos, Info{
				URL:          prefix.child(aws.ToString(o.Key)),
				Size:         aws.ToInt64(o.Size),
				ETag:         aws.ToString(o.ETag),
				LastModified: aws.ToTime(o.LastModified),
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return infos, nil
}

func (s *s3Store) listDirs(ctx context.Context, prefix Location) ([]string, error) {
	var dirs []string
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &prefix.Bucket, Prefix: &prefix.Key, Delimiter: aws.String("/")})
	err := eachPage(ctx, s, p, func(page *s3.ListObjectsV2Output) error {
		for _, cp := range page.CommonPrefixes {
			dirs = append(dirs, prefix.child(aws.ToString(cp.Prefix)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(dirs)
	return dirs, nil
}

func (s *s3Store) delete(ctx context.Context, l Location) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &l.Bucket, Key: &l.Key})
	return s.error(err)
}

func (s *s3Store) deletePrefix(ctx context.Context, prefix Location) (int, error) {
	deleted := 0
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: &prefix.Bucket, Prefix: &prefix.Key, MaxKeys: aws.Int32(deleteBatch),
	})
	err := eachPage(ctx, s, p, func(page *s3.ListObjectsV2Output) error {
		if len(page.Contents) == 0 {
			return nil
		}
		ids := make([]types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			ids[i] = types.ObjectIdentifier{Key: o.Key}
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: &prefix.Bucket,
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return s.error(err)
		}
		deleted += len(ids) - len(out.Errors)
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("%d keys not deleted, first %s: %s %s",
				len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		return nil
	})
	return deleted, err
}

func (s *s3Store) versioning(ctx context.Context, l Location) (bool, error) {
	out, err := s.client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &l.Bucket})
	if err != nil {
		return false, s.error(err)
	}
	return out.Status == types.BucketVersioningStatusEnabled, nil
}

func (s *s3Store) listVersions(ctx context.Context, l Location) ([]Version, error) {
	on, err := s.versioning(ctx, l)
	if err != nil {
		return nil, err
	}
	if !on {
		return nil, ErrVersioningDisabled
	}
	var vs []Version
	// The listing is by prefix: skip other keys that share it.
	p := s3.NewListObjectVersionsPaginator(s.client, &s3.ListObjectVersionsInput{Bucket: &l.Bucket, Prefix: &l.Key})
	err = eachPage(ctx, s, p, func(page *s3.ListObjectVersionsOutput) error {
		// Both kinds: the key's, its version, time and whether latest.
		add := func(key, id *string, at *time.Time, latest *bool, v Version) {
			if aws.ToString(key) == l.Key {
				v.URL, v.VersionID, v.LastModified, v.IsLatest = l.String(), aws.ToString(id), aws.ToTime(at), aws.ToBool(latest)
				vs = append(vs, v)
			}
		}
		for _, v := range page.Versions {
			add(v.Key, v.VersionId, v.LastModified, v.IsLatest, Version{Info: Info{Size: aws.ToInt64(v.Size), ETag: aws.ToString(v.ETag)}})
		}
		for _, m := range page.DeleteMarkers {
			add(m.Key, m.VersionId, m.LastModified, m.IsLatest, Version{DeleteMarker: true})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// S3 lists versions and delete markers separately, each newest first;
	// merge them by time, keeping each list's own order among equal times
	// and the latest first.
	slices.SortStableFunc(vs, func(a, b Version) int {
		switch {
		case a.IsLatest != b.IsLatest:
			if a.IsLatest {
				return -1
			}
			return 1
		default:
			return b.LastModified.Compare(a.LastModified)
		}
	})
	return vs, nil
}
