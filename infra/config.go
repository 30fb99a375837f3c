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
	ExpectVersion         int    // "expectVersion": the catalog format version the deployed release expects
	DriftSchedule         string // "driftSchedule": EventBridge Scheduler expression
	DefaultShards         int    // "shards": shard count for release-started migrations
	ShardMemoryMB         int    // "shardMemoryMb": export, transform, import
	ShardConcurrency      int    // "shardConcurrency": reserved concurrency of export and transform
	DistDir               string // "distDir": where `make build` wrote <function>.zip
	LogRetentionDays      int    // "logRetentionDays"
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
		DriftSchedule:         "rate(1 hour)",
		DefaultShards:         16,
		ShardMemoryMB:         3008,
		ShardConcurrency:      40,
		DistDir:               "../dist",
		LogRetentionDays:      90,
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
	if !strings.HasSuffix(c.CatalogPrefix, "/") || !strings.HasSuffix(c.StagingPrefix, "/") {
		return c, fmt.Errorf("context catalogPrefix and stagingPrefix must end in /")
	}
	if strings.HasPrefix(c.PointerKey, c.CatalogPrefix) {
		return c, fmt.Errorf("context pointerKey %q must not be under catalogPrefix %q", c.PointerKey, c.CatalogPrefix)
	}
	return c, nil
}
