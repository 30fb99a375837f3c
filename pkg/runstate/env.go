package runstate

import (
	"context"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/notify"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Env is what every step runs with: configuration, not state.
type Env struct {
	Store     *blob.Store
	Staging   string // root of staging, e.g. s3://rocklake-staging/migrations
	SlateDB   slatedb.Options
	CreatedBy string
	// ImportMargin is how long before its context's deadline Import stops
	// starting shards (default 60 s), so a Lambda returns in time.
	ImportMargin time.Duration
	// InPlaceMargin is how long before its context's deadline the in-place
	// step stops migrating (default: DefaultInPlaceMargin, or a quarter of
	// the step's time if less), keeping the rest for its undo, record and
	// lock.
	InPlaceMargin time.Duration
	// Local: the steps run in the CLI's process under pkg/asl (pkg/localrun),
	// not as Lambdas under Step Functions; the gate's token is pkg/asl's.
	Local bool
	// Publish sends the steps' own SNS messages (the gate's); nil:
	// SNSPublish.
	Publish Publish
	// ExpectedVersion reads the format version the deployed release expects
	// (the SSM parameter the release pipeline sets), for a Check or Drift
	// input that names none; nil: the input must name it.
	ExpectedVersion func(ctx context.Context) (string, error)
	// Progress counts what the long steps do as they go, for the CLI's
	// display of a local run; its nil counts count nothing.
	Progress Progress
	// ExecutionTimeout is the migration execution's top-level
	// TimeoutSeconds, which the lock's lease covers (LockLease); zero: the
	// definition's own (DefinitionTimeout).
	ExecutionTimeout time.Duration
	// InPlaceMemory is the memory, in bytes, of the function that runs the
	// InPlace step, which the in-place limit must fit (ErrInPlaceLimitTooLarge);
	// 0: this machine's (a local run).
	InPlaceMemory int64
}

// StagingOf is the staging of run id.
func (e Env) StagingOf(id string) layout.Staging {
	return layout.Staging{Root: e.Staging, MigrationID: id}
}

// Progress counts the long steps of a local run: the Map's export and
// transform shards (each count shared by the shards running at once), the
// import and the verify.
type Progress struct {
	Export, Transform, Import, Verify *shard.Progress
}

// Publish sends an SNS message for the definition's sns:publish tasks.
type Publish func(ctx context.Context, topic, subject, message string) error

// SNSPublish is Publish through SNS (pkg/notify), configured by the
// standard AWS environment.
func SNSPublish(ctx context.Context) (Publish, error) {
	pub, err := notify.NewPublisher(ctx, notify.Options{})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, topic, subject, msg string) error {
		_, err := pub.PublishOutcome(ctx, topic, subject, msg)
		return err
	}, nil
}

// Publisher is p, else SNS (SNSPublish) when there is a topic to send to;
// nil when p is nil and there is none.
func Publisher(ctx context.Context, p Publish, topic string) (Publish, error) {
	if p != nil || topic == "" {
		return p, nil
	}
	return SNSPublish(ctx)
}
