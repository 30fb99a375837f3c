package slatedb

/*
#include <stdlib.h>
#include "rocklake_slatedb.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
)

const (
	// renewTimeout bounds one renewal of the credentials (STS, SSO,
	// credential_process, the container or instance endpoint).
	renewTimeout = time.Minute
	// renewRetry is how long a failed renewal waits before trying again.
	renewRetry = 10 * time.Second
	// minRenewRetry: the least time between two renewals that brought
	// nothing newer.
	minRenewRetry = time.Second
	// maxRenewSleep: the renewer looks at the wall clock at least this often,
	// so a process that was suspended (a Lambda sandbox between invocations)
	// renews soon after it resumes.
	maxRenewSleep = time.Minute
)

// engineAWS is what the engine was handed: the engine reads no AWS_*
// variables, so the process's configuration (pkg/awsconfig, which pkg/blob
// uses too) is handed over before an s3:// database is opened, and
// credentials that expire are renewed ahead of expiry by one goroutine per
// configuration, which stops when the configuration is superseded.
var engineAWS struct {
	mu      sync.Mutex
	cfg     *awsconfig.Config // handed; nil before the first s3:// open
	renew   time.Time         // when the handed credentials are due for renewal; zero: never
	expires time.Time         // when the handed credentials expire, if they do
	stop    chan struct{}     // closes the running renewer, nil if none runs
}

// useS3 makes sure the engine holds the process's AWS configuration and
// valid credentials before it opens url, if url is on S3. No credentials is
// awsconfig.ErrNoCredentials, with the message pkg/blob gives.
func useS3(ctx context.Context, op, url string) error {
	if !strings.HasPrefix(url, "s3://") {
		return nil
	}
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return fmt.Errorf("slatedb: %s %s: %w", op, url, err)
	}
	e := &engineAWS
	e.mu.Lock()
	current, due := e.cfg == cfg, !e.renew.IsZero() && !time.Now().Before(e.renew)
	e.mu.Unlock()
	if current && !due {
		return nil
	}
	// Fetched without the lock, so that a slow source (SSO, STS, a
	// container endpoint) holds no other open past its own deadline.
	get := cfg.Credentials
	if current {
		get = cfg.Refresh // due: the renewer is late (a suspended process)
	}
	creds, err := get(ctx)
	if err != nil {
		return fmt.Errorf("slatedb: %s %s: %w", op, url, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cfg == cfg && creds.CanExpire && !creds.Expires.After(e.expires) {
		return nil // someone handed these, or newer ones, meanwhile
	}
	if err := hand(cfg, creds); err != nil {
		return fmt.Errorf("slatedb: %s %s: %w", op, url, err)
	}
	if e.cfg != cfg && e.stop != nil {
		close(e.stop) // the previous configuration's renewer
		e.stop = nil
	}
	e.cfg, e.expires = cfg, creds.Expires
	e.renew, _ = awsconfig.RefreshAt(creds, time.Now())
	if !e.renew.IsZero() && e.stop == nil {
		e.stop = make(chan struct{})
		go renewer(cfg, e.stop)
	}
	return nil
}

// renewer hands cfg's credentials to the engine anew whenever they are due,
// until stop closes or they no longer expire.
func renewer(cfg *awsconfig.Config, stop chan struct{}) {
	e := &engineAWS
	var backoff time.Duration
	for {
		e.mu.Lock()
		due := e.renew
		e.mu.Unlock()
		wait := backoff
		if wait == 0 {
			wait = time.Until(due) // the wall clock: due carries no monotonic reading
		}
		t := time.NewTimer(min(max(wait, 0), maxRenewSleep))
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
		if backoff == 0 && time.Now().Before(due) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), renewTimeout)
		creds, err := cfg.Refresh(ctx)
		cancel()
		e.mu.Lock()
		select {
		case <-stop: // superseded while renewing: hand nothing
			e.mu.Unlock()
			return
		default:
		}
		if err == nil && creds.CanExpire && !creds.Expires.After(e.expires) {
			// The source still hands out the same credentials (instance
			// and container roles do until shortly before expiry): ask
			// again later, not in a tight loop.
			e.mu.Unlock()
			backoff = min(renewRetry, max(time.Until(creds.Expires)/2, minRenewRetry))
			continue
		}
		if err == nil {
			err = hand(cfg, creds)
		}
		if err != nil {
			e.mu.Unlock()
			slog.Warn("slatedb: renewing the engine's AWS credentials failed; retrying", "retry_in", renewRetry, "err", err)
			backoff = renewRetry
			continue
		}
		backoff = 0
		e.expires = creds.Expires
		e.renew, _ = awsconfig.RefreshAt(creds, time.Now())
		if e.renew.IsZero() {
			e.stop = nil
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

// handed is rl_aws_set's JSON (native/src/aws.rs).
type handed struct {
	Region          string `json:"region"`
	Endpoint        string `json:"endpoint"`
	PathStyle       bool   `json:"path_style"`
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
	SessionToken    string `json:"session_token"`
	ExpiresUnixMS   int64  `json:"expires_unix_ms"`
	// The process's request limits (awsconfig.Limits), which bound the
	// engine's S3 requests as they bound the SDK's.
	ConnectTimeoutMS   int64 `json:"connect_timeout_ms"`
	FirstByteTimeoutMS int64 `json:"first_byte_timeout_ms"`
	StallTimeoutMS     int64 `json:"stall_timeout_ms"`
	Attempts           int   `json:"attempts"`
}

func hand(cfg *awsconfig.Config, creds aws.Credentials) error {
	h := handed{
		Region:          cfg.Region,
		Endpoint:        cfg.Endpoint,
		PathStyle:       cfg.PathStyle,
		AccessKeyID:     creds.AccessKeyID,
		SecretAccessKey: creds.SecretAccessKey,
		SessionToken:    creds.SessionToken,

		ConnectTimeoutMS:   cfg.Limits.Connect.Milliseconds(),
		FirstByteTimeoutMS: cfg.Limits.FirstByte.Milliseconds(),
		StallTimeoutMS:     cfg.Limits.Stall.Milliseconds(),
		Attempts:           cfg.Limits.Attempts,
	}
	if creds.CanExpire {
		h.ExpiresUnixMS = creds.Expires.UnixMilli()
	}
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("hand AWS settings to the engine: %w", err)
	}
	cs := C.CString(string(b))
	defer C.free(unsafe.Pointer(cs))
	var msg *C.char
	if code := C.rl_aws_set(cs, &msg); code != C.RL_OK {
		return &Error{Code: Code(code), Op: "hand AWS settings", Msg: takeString(msg)}
	}
	return nil
}
