package tracing

import (
	"context"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentPostgres installs the query tracer on a pool's connection
// configuration when tracing is on (and leaves it alone otherwise).
func InstrumentPostgres(cfg *pgx.ConnConfig) {
	if Enabled() && cfg.Tracer == nil {
		cfg.Tracer = pgxTracer{}
	}
}

// pgxTracer makes a client span per query and per batch. The statement's
// text is recorded (its arguments never are).
type pgxTracer struct{}

var (
	_ pgx.QueryTracer = pgxTracer{}
	_ pgx.BatchTracer = pgxTracer{}
)

const maxStatement = 2048

func statement(sql string) string {
	if len(sql) > maxStatement {
		return sql[:maxStatement]
	}
	return sql
}

func dbAttrs(conn *pgx.Conn) []attribute.KeyValue {
	a := []attribute.KeyValue{attribute.String("db.system.name", "postgresql")}
	if conn != nil {
		cc := conn.Config()
		a = append(a, attribute.String("server.address", cc.Host), attribute.Int("server.port", int(cc.Port)),
			attribute.String("db.namespace", cc.Database))
	}
	return a
}

func (pgxTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !Enabled() {
		return ctx
	}
	ctx, span := Tracer().Start(ctx, "postgres query", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(dbAttrs(conn), attribute.String("db.query.text", statement(data.SQL)))...))
	return context.WithValue(ctx, pgxSpanKey{}, span)
}

// pgxSpanKey holds the span a query or batch started (a span started
// elsewhere is never ended here).
type pgxSpanKey struct{}

func pgxSpan(ctx context.Context) (trace.Span, bool) {
	s, ok := ctx.Value(pgxSpanKey{}).(trace.Span)
	return s, ok
}

func (pgxTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	span, ok := pgxSpan(ctx)
	if !ok {
		return
	}
	if data.Err == nil {
		span.SetAttributes(attribute.Int64("db.response.returned_rows", data.CommandTag.RowsAffected()))
	}
	if data.Err == pgx.ErrNoRows {
		data.Err = nil // an answer, not a failure
	}
	End(span, data.Err)
}

func (pgxTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	if !Enabled() {
		return ctx
	}
	n := 0
	if data.Batch != nil {
		n = data.Batch.Len()
	}
	ctx, span := Tracer().Start(ctx, "postgres batch", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(dbAttrs(conn), attribute.Int("db.operation.batch.size", n))...))
	return context.WithValue(ctx, pgxSpanKey{}, span)
}

func (pgxTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	span, ok := pgxSpan(ctx)
	if ok && data.Err != nil && data.Err != pgx.ErrNoRows {
		span.RecordError(data.Err)
	}
}

func (pgxTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	if span, ok := pgxSpan(ctx); ok {
		End(span, data.Err)
	}
}
