package cache

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.Debug("go-redis", "msg", fmt.Sprintf(format, v...))
}

// RouteRedisLogs sends go-redis's internal log lines (reconnect attempts,
// pool dial failures) to log at debug level instead of stderr; the cache
// reports Redis outages itself, once per transition.
func RouteRedisLogs(log *slog.Logger) { redis.SetLogger(redisLogger{log}) }
