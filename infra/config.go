package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Config is everything a deployment may choose. Each field has a CDK context
// key (cdk deploy -c key=value, or "context" in cdk.json) and a default.
type Config struct {
	Name                  string // "name": prefix of every named resource
	CatalogBucketName     string // "catalogBucketName": empty lets CloudFormation name it
	StagingBucketName     string // "stagingBucketName"
	PointerKey            string // "pointerKey": the pointer object in the catalog bucket
	CatalogPrefix         string // "catalogPrefix": where the catalogs (SlateDB roots) live
	StagingPrefix         string // "stagingPrefix": ROCKLAKE_STAGING inside the staging bucket
	StagingExpireDays     int    // "stagingExpireDays": staging objects expire after this
	PointerNoncurrentDays int    // "pointerNoncurrentDays": old pointer versions (rollback) kept this long
	PointerVersionsKept   int    // "pointerVersionsKept": noncurrent pointer versions never expired
	CatalogNoncurrentDays int    // "catalogNoncurrentDays": SlateDB objects deleted by compaction kept this long
	ExpectVersion         int    // "expectVersion": the expected-version parameter's value when the stack creates it
	// "expectedVersionParameter": the SSM parameter in which the release
	// pipeline records the format version its RockLake release expects;
	// Check and the drift check read it at run time (default /<name>/expected-format-version).
	ExpectedVersionParameter string
	// "existingCatalogBucket", "existingStagingBucket": use the buckets
	// named catalogBucketName / stagingBucketName as they are (versioning,
	// lifecycle, TLS policy are then theirs to have) instead of creating them.
	ExistingCatalogBucket bool
	ExistingStagingBucket bool
	// "executionTimeoutHours": the migration's top-level TimeoutSeconds, so
	// that a hung execution ends (and the timed-out alarm pages); it must
	// cover the gate's wait (20 h) and the run (12 h): default 36.
	ExecutionTimeoutHours int
	DriftSchedule         string // "driftSchedule": EventBridge Scheduler expression
	DefaultShards         int    // "shards": shard count for release-started migrations
	// "inPlaceAuto": release-started migrations take Strategy A (in place,
	// the way back copied beside the catalog) when the catalog's transformed
	// keys and values fit the in-place limit (32 MiB), Strategy B otherwise.
	InPlaceAuto bool
	// "online" (default true): release-started migrations copy while
	// RockLake keeps committing and fence only for the last catch-up round
	// (migrate's default); false fences for the whole copy (migrate
	// --offline). With inPlaceAuto, a catalog under the in-place limit
	// still takes Strategy A (online applies to Strategy B).
	Online           bool
	ShardMemoryMB    int    // "shardMemoryMb": export, transform, import
	ShardConcurrency int    // "shardConcurrency": reserved concurrency of export and transform, and the Map's MaxConcurrency
	DistDir          string // "distDir": where `make build` wrote <function>.zip
	LogRetentionDays int    // "logRetentionDays"
	// "accountConcurrency" (1000, Lambda's default): the account's Lambda
	// concurrency in the Region, which the functions' reservations
	// (ReservedConcurrency) must leave 100 of.
	AccountConcurrency int
	Fleet              Fleet
}

// Fleet is the deployment's fleet of pointers (issue 39): none when
// Sources is empty; then the stack has no fleet state machine, rule or
// schedule, and its roles reach only its own pointer and catalogs.
type Fleet struct {
	// "fleetSources": s3:// prefixes (ending in /: every pointer object
	// under them) and lists (an object naming one pointer URL per line), in
	// one or several buckets; a comma-separated string or a JSON list.
	Sources []string
	// "fleetPrefixes": more s3:// prefixes the fleet's pointers and their
	// catalogs lie under (a list's pointers, catalogs kept apart from
	// their pointers). Scope is these and the prefix sources: the only
	// objects, besides the stack's own, its Lambdas may touch.
	Scope []string
	// "fleetName": what a release event's detail.fleet names to run this
	// fleet (default: name).
	Name string
	// "fleetCanary" (1), "fleetConcurrency" (4), "fleetMaxFailures" (0:
	// every pointer runs, each failure reported): the fleet run's canary,
	// the Distributed Map's MaxConcurrency and its failure limit.
	Canary, Concurrency, MaxFailures int
	// "fleetDriftSchedule": the fleet's drift check's schedule (default:
	// driftSchedule).
	DriftSchedule string
}

// Configured reports whether the deployment has a fleet.
func (f Fleet) Configured() bool { return len(f.Sources) > 0 }

// DefaultConfig is the configuration without any context.
func DefaultConfig() Config {
	return Config{
		Name:                  "rocklake-migrate",
		PointerKey:            "rocklake/CURRENT",
		CatalogPrefix:         "catalogs/",
		StagingPrefix:         "migrations/",
		StagingExpireDays:     7,
		PointerNoncurrentDays: 90,
		PointerVersionsKept:   10,
		CatalogNoncurrentDays: 30,
		ExpectVersion:         2,
		ExecutionTimeoutHours: 36,
		DriftSchedule:         "rate(1 hour)",
		DefaultShards:         16,
		ShardMemoryMB:         3008,
		ShardConcurrency:      40,
		DistDir:               "../dist",
		LogRetentionDays:      90,
		Online:                true,
		AccountConcurrency:    1000,
		Fleet:                 Fleet{Canary: 1, Concurrency: 4},
	}
}

// unreservedMinimum is what Lambda keeps unreserved of an account's
// concurrency (PutFunctionConcurrency: "leave at least 100 simultaneous
// executions unreserved").
const unreservedMinimum = 100

// ReservedConcurrency is each function's reserved concurrency. A fleet runs
// fleetConcurrency migrations at once (its Distributed Map's
// MaxConcurrency), each with its own Map of shard steps, one import writer
// and a few check steps: the reservations hold them all, or their steps
// are throttled past the definitions' retries (infra/README.md, A fleet of
// 1000 catalogs).
func ReservedConcurrency(c Config) map[string]int {
	fc := 0
	if c.Fleet.Configured() {
		fc = c.Fleet.Concurrency
	}
	return map[string]int{
		"check":   max(10, fc+2),
		"export":  max(c.ShardConcurrency, fc*min(c.DefaultShards, c.ShardConcurrency)),
		"import":  max(2, fc),
		"inplace": max(2, fc),
	}
}

// settle checks the fleet's context and fills its defaults. Each source
// and prefix is an s3:// URL under a bucket's root (a bucket's root would
// grant the whole bucket); a list names pointers anywhere, so with one the
// prefixes they lie under must be given.
func (f *Fleet) settle(c Config) error {
	if !f.Configured() {
		if len(f.Scope) > 0 {
			return fmt.Errorf("context fleetPrefixes without fleetSources")
		}
		return nil
	}
	if f.Name == "" {
		f.Name = c.Name
	}
	if f.DriftSchedule == "" {
		f.DriftSchedule = c.DriftSchedule
	}
	lists := false
	for _, src := range f.Sources {
		if _, _, err := splitS3(src); err != nil {
			return fmt.Errorf("context fleetSources: %w", err)
		}
		lists = lists || !strings.HasSuffix(src, "/")
	}
	for _, p := range f.Scope {
		if _, _, err := splitS3(p); err != nil || !strings.HasSuffix(p, "/") {
			return fmt.Errorf("context fleetPrefixes %q: want s3://bucket/prefix/ (ending in /) (%v)", p, err)
		}
	}
	if lists && len(f.Scope) == 0 {
		return fmt.Errorf("context fleetSources has a list (%s): its pointers may lie anywhere, so fleetPrefixes must say where (the roles reach nothing else)", strings.Join(f.Sources, ", "))
	}
	for _, src := range f.Sources {
		if strings.HasSuffix(src, "/") && !slices.Contains(f.Scope, src) {
			f.Scope = append(f.Scope, src)
		}
	}
	if _, err := FleetDefinition(c); err != nil {
		return err
	}
	return nil
}

// splitS3 is an s3:// URL's bucket and key, refusing a bucket's root.
func splitS3(u string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an s3:// URL", u)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" || strings.Trim(key, "/") == "" {
		return "", "", fmt.Errorf("%q: want a prefix or object under the bucket's root (the root would grant the whole bucket)", u)
	}
	return bucket, key, nil
}

// ConfigFromContext reads the context keys over the defaults.
func ConfigFromContext(node constructs.Node) (Config, error) {
	c := DefaultConfig()
	str := func(key string, dst *string) {
		if v := node.TryGetContext(jsii.String(key)); v != nil {
			*dst = fmt.Sprint(v)
		}
	}
	var err error
	num := func(key string, dst *int, min int) {
		v := node.TryGetContext(jsii.String(key))
		if v == nil || err != nil {
			return
		}
		n, e := strconv.Atoi(strings.TrimSuffix(fmt.Sprint(v), ".0"))
		if e != nil || n < min {
			err = fmt.Errorf("context %s: want an integer >= %d, got %v", key, min, v)
			return
		}
		*dst = n
	}
	str("name", &c.Name)
	str("catalogBucketName", &c.CatalogBucketName)
	str("stagingBucketName", &c.StagingBucketName)
	str("pointerKey", &c.PointerKey)
	str("catalogPrefix", &c.CatalogPrefix)
	str("stagingPrefix", &c.StagingPrefix)
	str("driftSchedule", &c.DriftSchedule)
	str("distDir", &c.DistDir)
	str("expectedVersionParameter", &c.ExpectedVersionParameter)
	flag := func(key string, dst *bool) {
		v := node.TryGetContext(jsii.String(key))
		if v == nil || err != nil {
			return
		}
		b, e := strconv.ParseBool(fmt.Sprint(v))
		if e != nil {
			err = fmt.Errorf("context %s: want true or false, got %v", key, v)
			return
		}
		*dst = b
	}
	flag("existingCatalogBucket", &c.ExistingCatalogBucket)
	flag("existingStagingBucket", &c.ExistingStagingBucket)
	flag("inPlaceAuto", &c.InPlaceAuto)
	flag("online", &c.Online)
	num("executionTimeoutHours", &c.ExecutionTimeoutHours, 1)
	num("stagingExpireDays", &c.StagingExpireDays, 1)
	num("pointerNoncurrentDays", &c.PointerNoncurrentDays, 1)
	num("pointerVersionsKept", &c.PointerVersionsKept, 0)
	num("catalogNoncurrentDays", &c.CatalogNoncurrentDays, 1)
	num("expectVersion", &c.ExpectVersion, 1)
	num("shards", &c.DefaultShards, 1)
	num("shardMemoryMb", &c.ShardMemoryMB, 128)
	num("shardConcurrency", &c.ShardConcurrency, 1)
	num("logRetentionDays", &c.LogRetentionDays, 1)
	urls := func(key string, dst *[]string) {
		v := node.TryGetContext(jsii.String(key))
		if v == nil || err != nil {
			return
		}
		var items []string
		switch v := v.(type) {
		case []any: // a JSON list in cdk.json
			for _, x := range v {
				items = append(items, fmt.Sprint(x))
			}
		default: // -c key=a,b
			items = strings.Split(fmt.Sprint(v), ",")
		}
		for _, it := range items {
			if it = strings.TrimSpace(it); it != "" {
				*dst = append(*dst, it)
			}
		}
	}
	urls("fleetSources", &c.Fleet.Sources)
	urls("fleetPrefixes", &c.Fleet.Scope)
	str("fleetName", &c.Fleet.Name)
	str("fleetDriftSchedule", &c.Fleet.DriftSchedule)
	num("fleetCanary", &c.Fleet.Canary, 0)
	num("fleetConcurrency", &c.Fleet.Concurrency, 1)
	num("fleetMaxFailures", &c.Fleet.MaxFailures, 0)
	num("accountConcurrency", &c.AccountConcurrency, unreservedMinimum)
	if err != nil {
		return c, err
	}
	if err := c.Fleet.settle(c); err != nil {
		return c, err
	}
	total := 0
	for _, n := range ReservedConcurrency(c) {
		total += n
	}
	if total > c.AccountConcurrency-unreservedMinimum {
		return c, fmt.Errorf("context: the functions reserve %d concurrent executions (%v: shardConcurrency %d, shards %d, fleetConcurrency %d), more than accountConcurrency %d leaves with %d unreserved; lower them, or raise the account's quota and say so with accountConcurrency",
			total, ReservedConcurrency(c), c.ShardConcurrency, c.DefaultShards, c.Fleet.Concurrency, c.AccountConcurrency, unreservedMinimum)
	}
	if c.ExpectedVersionParameter == "" {
		c.ExpectedVersionParameter = "/" + c.Name + "/expected-format-version"
	}
	if !strings.HasPrefix(c.ExpectedVersionParameter, "/") {
		return c, fmt.Errorf("context expectedVersionParameter %q must start with /", c.ExpectedVersionParameter)
	}
	if c.ExecutionTimeoutHours > 365*24 {
		return c, fmt.Errorf("context executionTimeoutHours %d: Step Functions runs a standard execution for at most a year", c.ExecutionTimeoutHours)
	}
	if c.ExistingCatalogBucket && c.CatalogBucketName == "" || c.ExistingStagingBucket && c.StagingBucketName == "" {
		return c, fmt.Errorf("context existingCatalogBucket and existingStagingBucket need catalogBucketName and stagingBucketName")
	}
	if !strings.HasSuffix(c.CatalogPrefix, "/") || !strings.HasSuffix(c.StagingPrefix, "/") {
		return c, fmt.Errorf("context catalogPrefix and stagingPrefix must end in /")
	}
	if strings.HasPrefix(c.PointerKey, c.CatalogPrefix) {
		return c, fmt.Errorf("context pointerKey %q must not be under catalogPrefix %q", c.PointerKey, c.CatalogPrefix)
	}
	return c, nil
}
