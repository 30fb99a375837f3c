package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

const (
	plainBucket     = "rocklake-plain"
	versionedBucket = "rocklake-versioned"
)

// startS3 starts versitygw with a plain and a versioned bucket and returns a
// Store configured, like production, from the environment only.
func startS3(t *testing.T) (*blob.Store, *s3server.Server) {
	t.Helper()
	st := s3server.Start(t)
	s3server.SetEnv(t, st)
	ctx := testenv.Context(t)
	if err := st.CreateBucket(ctx, plainBucket, false); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateBucket(ctx, versionedBucket, true); err != nil {
		t.Fatal(err)
	}
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return store, st
}

type root struct{ name, prefix string }

// roots are the places each behaviour is checked in: S3, file:// URLs, and
// absolute and relative plain paths, which must all behave the same.
func roots(t *testing.T) (*blob.Store, []root) {
	t.Helper()
	store, _ := startS3(t)
	dir := t.TempDir()
	t.Chdir(dir)
	return store, []root{
		{"s3", "s3://" + plainBucket + "/t/"},
		{"file-url", "file://" + dir + "/url/"},
		{"abs-path", dir + "/abs/"},
		{"rel-path", "rel/"},
	}
}

func TestPutGetRoundTrip(t *testing.T) {
	store, roots := roots(t)
	ctx := testenv.Context(t)
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			url := r.prefix + "dir/obj.json"
			body := []byte(`{"catalog":"s3://x/y","format":2}`)
			put, err := store.Put(ctx, url, body)
			if err != nil {
				t.Fatal(err)
			}
			if put.ETag == "" || put.Size != int64(len(body)) {
				t.Errorf("Put info = %+v", put)
			}
			got, info, err := store.Get(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, body) || info.ETag != put.ETag || info.Size != int64(len(body)) || info.LastModified.IsZero() {
				t.Errorf("Get = %q, %+v; want %q with the Put's ETag %s", got, info, body, put.ETag)
			}

			rc, oinfo, err := store.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			streamed, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(streamed, body) || oinfo.Size != int64(len(body)) {
				t.Errorf("Open read %q, %v, %+v", streamed, err, oinfo)
			}

			if _, err := store.Put(ctx, url, []byte("replaced")); err != nil {
				t.Fatal(err)
			}
			if got, _, _ := store.Get(ctx, url); string(got) != "replaced" {
				t.Errorf("after a second Put: %q", got)
			}

			if err := store.Delete(ctx, url); err != nil {
				t.Fatal(err)
			}
			if err := store.Delete(ctx, url); err != nil {
				t.Errorf("deleting a missing object: %v", err)
			}
			if _, _, err := store.Get(ctx, url); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Get after Delete: %v, want ErrNotFound", err)
			}
			if _, _, err := store.Open(ctx, url); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Open after Delete: %v, want ErrNotFound", err)
			}
		})
	}
}

// testData is deterministic pseudo-random bytes: incompressible, and the
// same on every run.
func testData(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	_, _ = r.Read(b)
	return b
}

func TestStreamLargeObject(t *testing.T) {
	store, roots := roots(t)
	ctx := testenv.Context(t)
	data := testData(20 << 20)
	want := sha256.Sum256(data)
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			url := r.prefix + "big.bin"
			w, err := store.Create(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			// Odd-sized writes, so that parts do not line up with them.
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 777_777)
				if _, err := w.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}

			rc, info, err := store.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			h := sha256.New()
			n, err := io.Copy(h, rc)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(data)) || info.Size != n || [32]byte(h.Sum(nil)) != want {
				t.Fatalf("read back %d bytes (info %d), sha256 mismatch or size", n, info.Size)
			}
			// A multipart upload's ETag is "<md5 of part md5s>-<parts>":
			// this proves the 20 MB went up in parts.
			if strings.HasPrefix(url, "s3://") && !strings.Contains(info.ETag, "-") {
				t.Errorf("ETag %s is not a multipart ETag", info.ETag)
			}
		})
	}
}

// An abandoned write leaves nothing: no object, no temporary file, no S3
// multipart upload holding parts.
func TestAbortedWriteLeavesNothing(t *testing.T) {
	store, roots := roots(t)
	ctx := testenv.Context(t)
	data := testData(20 << 20) // past the multipart threshold: parts get uploaded
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			url := r.prefix + "aborted/obj"
			w, err := store.Create(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
			w.Abort()
			if err := w.Close(); err == nil {
				t.Error("Close after Abort succeeded")
			}
			if _, _, err := store.Get(ctx, url); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Get after Abort: %v, want ErrNotFound", err)
			}
			if l, err := blob.Parse(url); err == nil && !l.IsS3() {
				entries, _ := os.ReadDir(filepath.Dir(l.Path))
				for _, e := range entries {
					t.Errorf("left behind: %s", e.Name())
				}
			}
		})
	}
	t.Run("no-multipart-uploads-left", func(t *testing.T) {
		c := rawS3(t)
		out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(plainBucket)})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range out.Uploads {
			t.Errorf("multipart upload left: %s %s", aws.ToString(u.Key), aws.ToString(u.UploadId))
		}
	})
}

// A cancelled ctx abandons the write the same way.
func TestCancelledWritePublishesNothing(t *testing.T) {
	store, roots := roots(t)
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testenv.Context(t))
			url := r.prefix + "cancelled"
			w, err := store.Create(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			if _, err := w.Write([]byte("partial")); err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := w.Close(); !errors.Is(err, context.Canceled) {
				t.Errorf("Close after cancel: %v, want context.Canceled", err)
			}
			if _, _, err := store.Get(testenv.Context(t), url); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Get: %v, want ErrNotFound", err)
			}
		})
	}
}

// rawS3 is a plain SDK client on the stack in the environment, to look at
// what pkg/blob does not expose.
func rawS3(t *testing.T) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(os.Getenv("AWS_ENDPOINT_URL")),
		Region:       os.Getenv("AWS_REGION"),
		Credentials: credentials.NewStaticCredentialsProvider(
			os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""),
		UsePathStyle: true,
	})
}

// This is what the pointer flip relies on, proven against versitygw (which
// honours If-Match and If-None-Match on PutObject) and local files.
func TestConditionalPut(t *testing.T) {
	store, roots := roots(t)
	ctx := testenv.Context(t)
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			url := r.prefix + "CURRENT"
			if _, err := store.PutIfMatch(ctx, url, []byte("x"), `"00000000000000000000000000000000"`); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("PutIfMatch on a missing object: %v, want ErrNotFound", err)
			}
			first, err := store.PutIfAbsent(ctx, url, []byte("v1"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.PutIfAbsent(ctx, url, []byte("other")); !errors.Is(err, blob.ErrPreconditionFailed) {
				t.Errorf("PutIfAbsent on an existing object: %v, want ErrPreconditionFailed", err)
			}
			second, err := store.PutIfMatch(ctx, url, []byte("v2"), first.ETag)
			if err != nil {
				t.Fatalf("PutIfMatch with the current ETag: %v", err)
			}
			if second.ETag == first.ETag {
				t.Errorf("ETag unchanged by a write: %s", second.ETag)
			}
			if _, err := store.PutIfMatch(ctx, url, []byte("v3"), first.ETag); !errors.Is(err, blob.ErrPreconditionFailed) {
				t.Errorf("PutIfMatch with a stale ETag: %v, want ErrPreconditionFailed", err)
			}
			got, info, err := store.Get(ctx, url)
			if err != nil || string(got) != "v2" || info.ETag != second.ETag {
				t.Errorf("after the refused writes: %q %+v %v, want v2", got, info, err)
			}
		})
	}
}

// Many writers race to replace the same version: exactly one may win.
func TestConditionalPutIsAtomic(t *testing.T) {
	store, roots := roots(t)
	ctx := testenv.Context(t)
	const writers = 8
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			url := r.prefix + "race"
			base, err := store.Put(ctx, url, []byte("base"))
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range writers {
				wg.Go(func() {
					_, errs[i] = store.PutIfMatch(ctx, url, fmt.Appendf(nil, "writer %d", i), base.ETag)
				})
			}
			wg.Wait()
			var won []int
			for i, err := range errs {
				switch {
				case err == nil:
					won = append(won, i)
				case !errors.Is(err, blob.ErrPreconditionFailed):
					t.Errorf("writer %d: %v", i, err)
				}
			}
			if len(won) != 1 {
				t.Fatalf("writers %v won, want exactly one", won)
			}
			got, _, _ := store.Get(ctx, url)
			if want := fmt.Sprintf("writer %d", won[0]); string(got) != want {
				t.Errorf("content %q, want %q", got, want)
			}
		})
	}
}

func TestListAndDeletePrefix(t *testing.T) {
	store, roots := roots(t)
	ctx := testenv.Context(t)
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			p := r.prefix + "mig/"
			for _, k := range []string{"a/1", "a/2", "a/b/3", "a-c", "ab", "b"} {
				if _, err := store.Put(ctx, p+k, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			list := func(prefix string) string {
				t.Helper()
				infos, err := store.List(ctx, prefix)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, info := range infos {
					names = append(names, strings.TrimPrefix(info.URL, strings.TrimPrefix(p, "file://")))
					if info.Size != int64(len(names[len(names)-1])) {
						t.Errorf("%s: size %d", info.URL, info.Size)
					}
				}
				return strings.Join(names, " ")
			}
			for prefix, want := range map[string]string{
				"":        "a-c a/1 a/2 a/b/3 ab b", // byte order: '-' < '/'
				"a/":      "a/1 a/2 a/b/3",
				"a":       "a-c a/1 a/2 a/b/3 ab",
				"a/b":     "a/b/3",
				"nothing": "",
			} {
				if got := list(p + prefix); got != want {
					t.Errorf("List(%q) = %q, want %q", prefix, got, want)
				}
			}
			if got := list(r.prefix + "no-such-dir/"); got != "" {
				t.Errorf("List of a missing prefix: %q", got)
			}

			n, err := store.DeletePrefix(ctx, p+"a/")
			if err != nil || n != 3 {
				t.Fatalf("DeletePrefix(a/) = %d, %v; want 3", n, err)
			}
			if got := list(p); got != "a-c ab b" {
				t.Errorf("after DeletePrefix(a/): %q", got)
			}
			if n, err := store.DeletePrefix(ctx, p); err != nil || n != 3 {
				t.Errorf("DeletePrefix(all) = %d, %v; want 3", n, err)
			}
			if got := list(r.prefix); got != "" {
				t.Errorf("after deleting everything: %q", got)
			}
		})
	}
}

// ListDirs lists one level below a prefix, as S3's Delimiter "/" does, the
// same on every store: no objects of that level, no deeper levels, and no
// local directory that holds nothing.
func TestListDirs(t *testing.T) {
	store, roots := roots(t)
	ctx := testenv.Context(t)
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			p := r.prefix + "staging/"
			for _, k := range []string{"m-1/plan.json", "m-1/v1/shard-0", "m-2/results/x.json", "decisions/m-1", "top.json", "m-10/a"} {
				if _, err := store.Put(ctx, p+k, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			// A sibling sharing the prefix's spelling is not below it.
			if _, err := store.Put(ctx, r.prefix+"staging-other/m-9/x", []byte("x")); err != nil {
				t.Fatal(err)
			}
			// A local directory left empty is no prefix of any object.
			if !strings.HasPrefix(p, "s3://") {
				if err := os.MkdirAll(filepath.Join(strings.TrimPrefix(p, "file://"), "empty", "deeper"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			dirs := func(prefix string) string {
				t.Helper()
				got, err := store.ListDirs(ctx, prefix)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, d := range got {
					names = append(names, strings.TrimPrefix(d, strings.TrimPrefix(p, "file://")))
				}
				return strings.Join(names, " ")
			}
			for prefix, want := range map[string]string{
				"":        "decisions/ m-1/ m-10/ m-2/",
				"m-1":     "m-1/ m-10/",
				"m-1/":    "m-1/v1/",
				"m-2/":    "m-2/results/",
				"top":     "",
				"nothing": "",
			} {
				if got := dirs(p + prefix); got != want {
					t.Errorf("ListDirs(%q) = %q, want %q", prefix, got, want)
				}
			}
			if got := dirs(r.prefix + "no-such-dir/"); got != "" {
				t.Errorf("ListDirs of a missing prefix: %q", got)
			}
			// Every directory listed is a prefix List finds objects under.
			got, err := store.ListDirs(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range got {
				if infos, err := store.List(ctx, d); err != nil || len(infos) == 0 {
					t.Errorf("List(%s) = %d objects, %v", d, len(infos), err)
				}
			}
		})
	}
}

func TestVersionsAndRestore(t *testing.T) {
	store, _ := startS3(t)
	ctx := testenv.Context(t)
	url := "s3://" + versionedBucket + "/rocklake/CURRENT"

	if on, err := store.BucketVersioning(ctx, url); err != nil || !on {
		t.Fatalf("BucketVersioning(versioned) = %v, %v", on, err)
	}
	if on, err := store.BucketVersioning(ctx, "s3://"+plainBucket); err != nil || on {
		t.Errorf("BucketVersioning(plain) = %v, %v", on, err)
	}

	var puts []blob.Info
	for _, body := range []string{"v1", "v2", "v3"} {
		info, err := store.Put(ctx, url, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if info.VersionID == "" {
			t.Fatalf("Put into a versioned bucket returned no version id")
		}
		puts = append(puts, info)
	}
	// A key sharing the prefix must not show up among the versions.
	if _, err := store.Put(ctx, url+".bak", []byte("other key")); err != nil {
		t.Fatal(err)
	}

	vs, err := store.ListVersions(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 {
		t.Fatalf("ListVersions: %d versions, want 3: %+v", len(vs), vs)
	}
	for i, v := range vs {
		want := puts[len(puts)-1-i] // newest first
		if v.VersionID != want.VersionID || v.ETag != want.ETag || v.IsLatest != (i == 0) || v.DeleteMarker {
			t.Errorf("version %d = %+v, want %+v", i, v, want)
		}
	}
	body, info, err := store.GetVersion(ctx, url, puts[0].VersionID)
	if err != nil || string(body) != "v1" || info.VersionID != puts[0].VersionID {
		t.Errorf("GetVersion(v1) = %q, %+v, %v", body, info, err)
	}
	if _, _, err := store.GetVersion(ctx, url, "01AAAAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("GetVersion(unknown) = %v, want ErrNotFound", err)
	}

	// Deleting leaves a marker on top; the content stays restorable.
	if err := store.Delete(ctx, url); err != nil {
		t.Fatal(err)
	}
	vs, err = store.ListVersions(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 4 || !vs[0].DeleteMarker || !vs[0].IsLatest {
		t.Errorf("versions after Delete: %+v; want a delete marker on top", vs)
	}
	if _, _, err := store.Get(ctx, url); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
}

func TestVersioningDisabled(t *testing.T) {
	store, _ := startS3(t)
	ctx := testenv.Context(t)
	s3URL := "s3://" + plainBucket + "/obj"
	_, err := store.Put(ctx, s3URL, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	fileURL := filepath.Join(t.TempDir(), "obj")
	if _, err := store.Put(ctx, fileURL, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{s3URL, fileURL} {
		if _, err := store.ListVersions(ctx, url); !errors.Is(err, blob.ErrVersioningDisabled) {
			t.Errorf("ListVersions(%s): %v, want ErrVersioningDisabled", url, err)
		}
	}
	if _, _, err := store.GetVersion(ctx, fileURL, "some-version"); !errors.Is(err, blob.ErrVersioningDisabled) {
		t.Errorf("GetVersion(file): %v, want ErrVersioningDisabled", err)
	}
	if on, err := store.BucketVersioning(ctx, fileURL); err != nil || on {
		t.Errorf("BucketVersioning(file) = %v, %v", on, err)
	}
}

func TestMissingBucket(t *testing.T) {
	store, _ := startS3(t)
	ctx := testenv.Context(t)
	url := "s3://rocklake-no-such-bucket/k"
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, blob.ErrNoSuchBucket) {
			t.Errorf("%s: %v, want ErrNoSuchBucket", op, err)
		}
	}
	_, _, err := store.Get(ctx, url)
	check("Get", err)
	_, _, err = store.Open(ctx, url)
	check("Open", err)
	_, err = store.Put(ctx, url, []byte("x"))
	check("Put", err)
	_, err = store.PutIfAbsent(ctx, url, []byte("x"))
	check("PutIfAbsent", err)
	_, err = store.List(ctx, url)
	check("List", err)
	_, err = store.BucketVersioning(ctx, url)
	check("BucketVersioning", err)
	w, err := store.Create(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	closeErr := w.Close()
	check("Create+Close", closeErr)
	if closeErr != nil && !strings.Contains(closeErr.Error(), url) {
		t.Errorf("error %v does not name the URL", closeErr)
	}
}

func TestErrorsNameTheURL(t *testing.T) {
	store, err := blob.New(testenv.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	url := filepath.Join(t.TempDir(), "missing")
	_, _, err = store.Get(testenv.Context(t), url)
	if !errors.Is(err, blob.ErrNotFound) || !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "get") {
		t.Errorf("Get error %q: want ErrNotFound naming the operation and %s", err, url)
	}
	if _, err := store.Put(testenv.Context(t), "gs://bucket/x", nil); err == nil || !strings.Contains(err.Error(), "gs://bucket/x") {
		t.Errorf("Put to an unsupported URL: %v", err)
	}
}

// Get reads control objects only: a bigger object is ErrTooLarge, not an
// unbounded allocation; Open still streams it.
func TestGetRefusesLargeObjects(t *testing.T) {
	store, rs := roots(t)
	ctx := testenv.Context(t)
	big := bytes.Repeat([]byte("x"), blob.MaxGetSize+1)
	for _, r := range rs[:2] {
		url := r.prefix + "big"
		if _, err := store.Put(ctx, url, big); err != nil {
			t.Fatal(err)
		}
		if _, _, err := store.Get(ctx, url); !errors.Is(err, blob.ErrTooLarge) {
			t.Fatalf("%s: Get of %d bytes: %v, want ErrTooLarge", r.name, len(big), err)
		}
		rc, _, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil || n != int64(len(big)) {
			t.Fatalf("%s: Open streamed %d bytes, %v", r.name, n, err)
		}
	}
}

// A conditional GET (If-None-Match) is sent the object only when its ETag
// changed: what a pointer's watcher polls with.
func TestGetIfNoneMatch(t *testing.T) {
	store, roots := roots(t)
	ctx := testenv.Context(t)
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			url := r.prefix + "WATCHED"
			if _, _, err := store.GetIfNoneMatch(ctx, url, `"00000000000000000000000000000000"`); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("a missing object: %v, want ErrNotFound", err)
			}
			first, err := store.Put(ctx, url, []byte("v1"))
			if err != nil {
				t.Fatal(err)
			}
			body, info, err := store.GetIfNoneMatch(ctx, url, "")
			if err != nil || string(body) != "v1" || info.ETag != first.ETag {
				t.Fatalf("no ETag: %q %+v %v, want v1 at %s", body, info, err, first.ETag)
			}
			if body, _, err := store.GetIfNoneMatch(ctx, url, first.ETag); !errors.Is(err, blob.ErrNotModified) || body != nil {
				t.Fatalf("the current ETag: %q %v, want ErrNotModified", body, err)
			}
			second, err := store.Put(ctx, url, []byte("v2"))
			if err != nil {
				t.Fatal(err)
			}
			body, info, err = store.GetIfNoneMatch(ctx, url, first.ETag)
			if err != nil || string(body) != "v2" || info.ETag != second.ETag {
				t.Fatalf("after a write: %q %+v %v, want v2 at %s", body, info, err, second.ETag)
			}
		})
	}
}
