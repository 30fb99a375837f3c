// Package notify owns alerts through SNS: one message per drift check that
// found something (PublishDrift) and the migration outcome messages of the
// workflow's NotifySuccess and NotifyFailure (PublishOutcome).
//
// The SNS client takes credentials and region from pkg/awsconfig (the
// process's one AWS chain, shared with S3); the endpoint is
// AWS_ENDPOINT_URL_SNS if set, else AWS_ENDPOINT_URL, else AWS's
// (Options.Endpoint overrides all three).
// Tests point it at an emulator on loopback (internal/testenv/snsserver).
//
// Messages carry two string attributes for subscription filter policies:
// "event" ("drift" or "outcome") and, for drift, "kinds" (the finding kinds,
// comma-separated).
package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// SNS limits.
const (
	// MaxSubject is the longest subject SNS accepts (printable ASCII only).
	MaxSubject = 100
	// MaxBody is the longest message body sent: SNS takes 256 KiB for
	// the body and attributes together; a margin is left for those.
	MaxBody = 256<<10 - 4<<10
)

// ErrUnreachable: SNS did not answer within the process's limits
// (awsconfig.Limits), after their attempts; worth retrying (Transient).
var ErrUnreachable = errname.NewRetryable("notify", errname.Transient, "SNS endpoint unreachable")

// Options configure a Publisher.
type Options struct {
	// Endpoint overrides the SNS endpoint (e.g. http://127.0.0.1:PORT).
	Endpoint string
}

// Publisher publishes to SNS topics. It is safe for concurrent use.
type Publisher struct {
	client *sns.Client
	limits awsconfig.Limits
}

// NewPublisher uses the process's AWS configuration (awsconfig.Load; no
// network access): its credentials, and the same limits on every request
// as S3's (a connection, a first byte, a stalled body, the attempts an
// endpoint that does not answer gets), so that a dead SNS endpoint is
// named as soon as a dead S3 one.
func NewPublisher(ctx context.Context, opts Options) (*Publisher, error) {
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	client := sns.NewFromConfig(cfg.AWS, func(o *sns.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
	})
	return &Publisher{client: client, limits: cfg.Limits}, nil
}

// PublishDrift sends the report as exactly one message (subject: the
// summary; body: the report's JSON) when it has findings, and nothing when
// it has none (healthy). It returns the SNS message id, "" when nothing was sent.
// A report too big for SNS is sent with its first findings only, and
// FindingsOmitted says how many were left out.
func (p *Publisher) PublishDrift(ctx context.Context, topicARN string, r drift.Report) (string, error) {
	if len(r.Findings) == 0 {
		return "", nil
	}
	body, err := DriftBody(r)
	if err != nil {
		return "", err
	}
	kinds := make([]string, 0, len(r.Findings))
	for _, k := range r.Kinds() {
		kinds = append(kinds, string(k))
	}
	attrs := map[string]string{"event": "drift", "kinds": strings.Join(kinds, ",")}
	return p.publish(ctx, topicARN, DriftSubject(r), body, attrs)
}

// DriftSubject is the subject of a drift alert.
func DriftSubject(r drift.Report) string {
	return Subject("RockLake drift on " + r.Pointer + ": " + r.Summary())
}

// DriftBody is the body of a drift alert: the report as indented JSON,
// trimmed to MaxBody by leaving out findings from the end.
func DriftBody(r drift.Report) ([]byte, error) {
	all := r.Findings
	for keep := len(all); ; {
		r.Findings = all[:keep]
		r.FindingsOmitted = len(all) - keep
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("notify: encode drift report: %w", err)
		}
		if len(b) <= MaxBody {
			return b, nil
		}
		if keep == 0 {
			return nil, fmt.Errorf("notify: drift report of %d bytes without findings, more than SNS takes", len(b))
		}
		// Shrink in proportion, at least by one.
		keep = min(keep-1, keep*MaxBody/len(b))
	}
}

// PublishOutcome sends one message about a migration's outcome (success
// or failure). The subject is made fit for SNS (see Subject); a body longer
// than MaxBody is cut, with a note saying how much was left out.
func (p *Publisher) PublishOutcome(ctx context.Context, topicARN, subject, body string) (string, error) {
	if strings.TrimSpace(body) == "" {
		return "", errors.New("notify: empty message body")
	}
	return p.publish(ctx, topicARN, Subject(subject), []byte(truncateBody(body)), map[string]string{"event": "outcome"})
}

func (p *Publisher) publish(ctx context.Context, topicARN, subject string, body []byte, attrs map[string]string) (string, error) {
	if topicARN == "" {
		return "", errors.New("notify: no SNS topic ARN")
	}
	in := &sns.PublishInput{
		TopicArn: aws.String(topicARN),
		Message:  aws.String(string(body)),
	}
	if subject != "" {
		in.Subject = aws.String(subject)
	}
	if len(attrs) > 0 {
		in.MessageAttributes = map[string]types.MessageAttributeValue{}
		for k, v := range attrs {
			if v == "" {
				continue // SNS refuses empty attribute values
			}
			in.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
	}
	out, err := p.client.Publish(ctx, in)
	if silence, silent := p.limits.NoAnswer(err); silent {
		endpoint := cmp.Or(aws.ToString(p.client.Options().BaseEndpoint), "AWS SNS")
		return "", fmt.Errorf("%w: publish to %s: %s did not answer, %s: %w", ErrUnreachable, topicARN, endpoint, silence, err)
	}
	if err != nil {
		return "", fmt.Errorf("notify: publish to %s: %w", topicARN, err)
	}
	return aws.ToString(out.MessageId), nil
}

// Subject makes s a valid SNS subject: printable ASCII only (anything else
// becomes '?', line breaks and tabs a space), trimmed, at most MaxSubject
// characters (cut with "...").
func Subject(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	out := strings.TrimSpace(b.String())
	if len(out) > MaxSubject {
		out = strings.TrimSpace(out[:MaxSubject-3]) + "..."
	}
	return out
}

func truncateBody(s string) string {
	if len(s) <= MaxBody {
		return s
	}
	note := func(n int) string { return fmt.Sprintf("\n[truncated: %d bytes left out]", n) }
	cut := MaxBody - len(note(len(s)))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note(len(s)-cut)
}
