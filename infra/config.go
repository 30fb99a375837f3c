package main

import (
	"fmt"
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
}

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
	}
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
	if err != nil {
		return c, err
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
