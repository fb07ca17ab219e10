package tracing

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentRedis adds the tracing hook to rdb when tracing is on (and
// nothing otherwise): a client span per command and per pipeline, named
// after the command (its arguments, keys included, are not recorded).
func InstrumentRedis(rdb redis.UniversalClient) {
	if Enabled() && rdb != nil {
		rdb.AddHook(redisHook{})
	}
}

type redisHook struct{}

var _ redis.Hook = redisHook{}

func (redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !Enabled() || !trace.SpanContextFromContext(ctx).IsValid() {
			// Background traffic (pub/sub, polls) starts no trace of its own.
			return next(ctx, cmd)
		}
		name := strings.ToUpper(cmd.Name())
		ctx, span := Tracer().Start(ctx, "redis "+name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", name)))
		err := next(ctx, cmd)
		End(span, redisErr(err))
		return err
	}
}

func (redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !Enabled() || !trace.SpanContextFromContext(ctx).IsValid() {
			return next(ctx, cmds)
		}
		names := make([]string, 0, min(len(cmds), 8))
		for i, c := range cmds {
			if i == 8 {
				names = append(names, "...")
				break
			}
			names = append(names, strings.ToUpper(c.Name()))
		}
		ctx, span := Tracer().Start(ctx, "redis pipeline", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", "PIPELINE"),
				attribute.Int("db.operation.batch.size", len(cmds)), attribute.String("attestd.redis.commands", strings.Join(names, " "))))
		err := next(ctx, cmds)
		End(span, redisErr(err))
		return err
	}
}

// redisErr is err unless it is an answer (a missing key), not a failure.
func redisErr(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
