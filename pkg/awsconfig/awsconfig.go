// Package awsconfig owns the process's AWS configuration for S3: credentials
// from the standard chain (environment, shared config and credentials files
// with profiles, SSO and credential_process, web identity, container and
// instance roles), the region, the endpoint, the addressing style and the
// limits that bound every request (Limits). It is resolved once per process
// and shared by pkg/blob (the Go SDK) and pkg/slatedb (which hands it to the
// engine), so both sides talk to the same S3 as the same principal, give up
// on a silent one alike, and fail the same way when there are no credentials
// (ErrNoCredentials).
package awsconfig

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// DefaultRegion is the region used when none is configured: what SlateDB's
// object_store assumed, and what S3-compatible servers accept.
const DefaultRegion = "us-east-1"

const (
	// maxRefreshMargin is how long before expiry credentials are renewed;
	// short-lived ones are renewed at half their remaining life.
	maxRefreshMargin = 5 * time.Minute
)

// ErrNoCredentials: no AWS credentials could be had from any standard
// source. The error returned is a *NoCredentialsError naming what was tried.
var ErrNoCredentials = errname.New("awsconfig", "NoCredentials", "no AWS credentials")

// NoCredentialsError says which sources were tried and why the last failed.
type NoCredentialsError struct {
	Tried string
	Err   error
}

func (e *NoCredentialsError) Error() string {
	return fmt.Sprintf("%s: tried %s: %v", ErrNoCredentials, e.Tried, e.Err)
}

func (e *NoCredentialsError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNoCredentials) hold.
func (e *NoCredentialsError) Is(target error) bool { return target == ErrNoCredentials }

// ErrorName is ErrNoCredentials' name.
func (e *NoCredentialsError) ErrorName() string { return ErrNoCredentials.ErrorName() }

// Config is the resolved configuration. It is immutable; its credentials are
// cached and renewed on expiry.
type Config struct {
	// AWS is the SDK configuration; its Credentials return
	// *NoCredentialsError when the chain yields none.
	AWS aws.Config
	// Region is never empty (DefaultRegion when none is configured).
	Region string
	// Endpoint is the S3 endpoint URL, "" for AWS S3: AWS_ENDPOINT_URL_S3,
	// AWS_ENDPOINT_URL, endpoint_url in the profile, or (as SlateDB's
	// object_store spells it) AWS_ENDPOINT.
	Endpoint string
	// PathStyle: requests name the bucket in the path, not the host. Set
	// whenever Endpoint is: S3-compatible servers have no per-bucket DNS
	// names.
	PathStyle bool
	// Limits bound every request (ROCKLAKE_S3_* variables, else
	// DefaultLimits): the SDK's through AWS's HTTP client and retryer, the
	// engine's as pkg/slatedb hands them over.
	Limits Limits

	cache *aws.CredentialsCache
}

// Describe names the S3 endpoint, for error messages.
func (c *Config) Describe() string {
	if c.Endpoint != "" {
		return c.Endpoint
	}
	return "AWS S3 (" + c.Region + ")"
}

// Credentials returns valid credentials, from the cache while they last. No
// credentials from any source is a *NoCredentialsError (ErrNoCredentials).
func (c *Config) Credentials(ctx context.Context) (aws.Credentials, error) {
	return c.AWS.Credentials.Retrieve(ctx)
}

// Refresh drops the cached credentials and resolves them anew: for handing
// fresh credentials on ahead of expiry.
func (c *Config) Refresh(ctx context.Context) (aws.Credentials, error) {
	c.cache.Invalidate()
	return c.Credentials(ctx)
}

// RefreshAt is when credentials retrieved at got should be renewed: 5 min
// before they expire, or at half their remaining life if that is shorter.
// ok is false for credentials that do not expire.
func RefreshAt(creds aws.Credentials, got time.Time) (at time.Time, ok bool) {
	if !creds.CanExpire {
		return time.Time{}, false
	}
	margin := min(maxRefreshMargin, creds.Expires.Sub(got)/2)
	return creds.Expires.Add(-max(margin, 0)), true
}

var shared struct {
	mu  sync.Mutex
	env string
	cfg *Config
}

// Load returns the process's configuration, resolving it on first use (no
// network access: credentials are fetched when first needed). It is resolved
// again only when the AWS_* or ROCKLAKE_S3_* environment changes (which
// tests do).
func Load(ctx context.Context) (*Config, error) {
	env := awsEnv()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cfg != nil && shared.env == env {
		return shared.cfg, nil
	}
	cfg, err := resolve(ctx)
	if err != nil {
		return nil, fmt.Errorf("awsconfig: load AWS configuration: %w", err)
	}
	shared.env, shared.cfg = env, cfg
	return cfg, nil
}

// awsEnv is the part of the environment the configuration depends on.
func awsEnv() string {
	var vs []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "ROCKLAKE_S3_") {
			vs = append(vs, kv)
		}
	}
	slices.Sort(vs)
	return strings.Join(vs, "\x00")
}

func resolve(ctx context.Context) (*Config, error) {
	limits, err := limitsFromEnv()
	if err != nil {
		return nil, err
	}
	// Every AWS call (S3, STS, SSO, IMDS) has its connection and first byte
	// bounded by the limits.
	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = limits.Connect }).
		WithTransportOptions(func(t *http.Transport) { t.ResponseHeaderTimeout = limits.FirstByte })
	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(httpClient))
	if err != nil {
		return nil, err
	}
	// The clients made from cfg (S3's) have their response bodies bounded
	// too; the wrapper goes on after loading, as the loader adds a CA bundle
	// (AWS_CA_BUNDLE) only to the SDK's own client type.
	cfg.HTTPClient = stallGuard{inner: cfg.HTTPClient, stall: limits.Stall}
	cfg.APIOptions = append(cfg.APIOptions, countSilence)
	cfg.Retryer = func() aws.Retryer { return limits.Retryer(retry.NewStandard()) }
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	cache, ok := cfg.Credentials.(*aws.CredentialsCache)
	if !ok {
		// LoadDefaultConfig always caches; a nil provider means none at all.
		cache = aws.NewCredentialsCache(orNone(cfg.Credentials))
	}
	cfg.Credentials = namedErrors{cache: cache, tried: tried()}
	// The S3 client resolves its endpoint (AWS_ENDPOINT_URL_S3, the profile's
	// services section, AWS_ENDPOINT_URL) as it is built: ask it.
	endpoint := aws.ToString(s3.NewFromConfig(cfg).Options().BaseEndpoint)
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT")
	}
	return &Config{
		AWS:       cfg,
		Region:    cfg.Region,
		Endpoint:  endpoint,
		PathStyle: endpoint != "",
		Limits:    limits,
		cache:     cache,
	}, nil
}

// namedErrors turns the chain's failure into a *NoCredentialsError; the
// caller's own cancellation or deadline stays what it is.
type namedErrors struct {
	cache *aws.CredentialsCache
	tried string
}

func (p namedErrors) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := p.cache.Retrieve(ctx)
	if err == nil {
		return c, nil
	}
	if ctx.Err() != nil {
		return c, err
	}
	return c, &NoCredentialsError{Tried: p.tried, Err: err}
}

type none struct{}

func (none) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, errors.New("no credential provider configured")
}

func orNone(p aws.CredentialsProvider) aws.CredentialsProvider {
	if p == nil {
		return none{}
	}
	return p
}

// tried names the chain's sources as this environment configures them.
func tried() string {
	profile := cmp.Or(os.Getenv("AWS_PROFILE"), "default")
	cfgFile := cmp.Or(os.Getenv("AWS_CONFIG_FILE"), config.DefaultSharedConfigFilename())
	credFile := cmp.Or(os.Getenv("AWS_SHARED_CREDENTIALS_FILE"), config.DefaultSharedCredentialsFilename())
	return fmt.Sprintf("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile %q in %s and %s (AWS_PROFILE: keys, SSO, credential_process, role), "+
		"web identity (AWS_WEB_IDENTITY_TOKEN_FILE), container role (AWS_CONTAINER_CREDENTIALS_*), EC2 instance role (IMDS)",
		profile, cfgFile, credFile)
}
