package function

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// logAttrsKey keys the attributes every log line of one step invocation
// carries: the Lambda request id, the migration id, the shard, the pointer.
type logAttrsKey struct{}

// WithLogAttrs returns ctx whose log lines (through a LogHandler) carry
// attrs, after any ctx already carries.
func WithLogAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	prev, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	all := make([]slog.Attr, 0, len(prev)+len(attrs))
	return context.WithValue(ctx, logAttrsKey{}, append(append(all, prev...), attrs...))
}

// LogHandler adds the attributes of a record's context (WithLogAttrs) to
// the record, so that every line logged with that context, by any package,
// names its request, migration and shard: what an on-call engineer
// searches the logs by.
type LogHandler struct{ inner slog.Handler }

// NewLambdaLogger is the Lambdas' logger: JSON lines on w, each carrying
// its context's attributes. The functions make it slog's default too, so
// that any package logging with a context names the invocation.
func NewLambdaLogger(w io.Writer) *slog.Logger {
	return slog.New(NewLogHandler(slog.NewJSONHandler(w, nil)))
}

// NewLogHandler wraps h (once: a LogHandler is returned as it is).
func NewLogHandler(h slog.Handler) *LogHandler {
	if lh, ok := h.(*LogHandler); ok {
		return lh
	}
	return &LogHandler{inner: h}
}

// Enabled implements slog.Handler.
func (h *LogHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs, _ := ctx.Value(logAttrsKey{}).([]slog.Attr); len(attrs) > 0 {
		r = r.Clone()
		r.AddAttrs(attrs...)
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogHandler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{inner: h.inner.WithGroup(name)}
}

// requestLogAttrs are the attributes of one invocation: the Lambda request
// id (when it runs in Lambda) and whichever of the migration id, the shard
// and the pointer the step's input names (every step's input has one of
// these shapes: Migration, ShardInput, AbortInput, CheckInput,
// RollbackInput, DriftInput).
func requestLogAttrs(ctx context.Context, step string, in json.RawMessage) []slog.Attr {
	attrs := []slog.Attr{slog.String("step", step)}
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		attrs = append(attrs, slog.String("request_id", lc.AwsRequestID))
	}
	var ids struct {
		MigrationID string `json:"migration_id"`
		Index       *int   `json:"index"`
		Pointer     string `json:"pointer"`
		Migration   *struct {
			MigrationID string `json:"migration_id"`
			Pointer     string `json:"pointer"`
		} `json:"migration"`
	}
	_ = json.Unmarshal(in, &ids) // a malformed input fails the step, which says so
	if ids.Migration != nil {
		ids.MigrationID, ids.Pointer = ids.Migration.MigrationID, ids.Migration.Pointer
	}
	if ids.MigrationID != "" {
		attrs = append(attrs, slog.String("migration_id", ids.MigrationID))
	}
	if ids.Index != nil {
		attrs = append(attrs, slog.Int("shard", *ids.Index))
	}
	if ids.Pointer != "" {
		attrs = append(attrs, slog.String("pointer", ids.Pointer))
	}
	return attrs
}

// MetricsNamespace is the CloudWatch namespace of the steps' metrics
// (the dashboard's import rows/s, shards done).
const MetricsNamespace = "RockLakeMigrate"

// Metric names the steps emit, with the dimension Step.
const (
	MetricRows     = "Rows"
	MetricDuration = "StepDuration"
)

// logMetrics logs one line in CloudWatch's embedded metric format: in
// Lambda, CloudWatch Logs turns it into the metrics Rows and StepDuration
// (milliseconds) of the step, with no API call and no extra permission.
func logMetrics(ctx context.Context, log *slog.Logger, step string, rows uint64, d time.Duration, now time.Time) {
	meta := map[string]any{
		"Timestamp": now.UnixMilli(),
		"CloudWatchMetrics": []map[string]any{{
			"Namespace":  MetricsNamespace,
			"Dimensions": [][]string{{"Step"}},
			"Metrics": []map[string]string{
				{"Name": MetricRows, "Unit": "Count"},
				{"Name": MetricDuration, "Unit": "Milliseconds"},
			},
		}},
	}
	log.InfoContext(ctx, "step metrics", slog.Any("_aws", meta), slog.String("Step", step),
		slog.Uint64(MetricRows, rows), slog.Int64(MetricDuration, d.Milliseconds()))
}
