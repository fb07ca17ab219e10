package config

import (
	"io"
	"log/slog"
	"os"
	"strings"
)

// Log formats (ATTESTD_LOG_FORMAT).
const (
	LogAuto = "auto" // text on a terminal, JSON otherwise
	LogJSON = "json"
	LogText = "text"
)

// LogFormat reads ATTESTD_LOG_FORMAT with getenv (the process environment
// when nil): auto when unset or not one of auto, json, text (FromEnv
// reports a bad value; a logger must still be made to report it).
func LogFormat(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("ATTESTD_LOG_FORMAT"))); v {
	case LogJSON, LogText:
		return v
	}
	return LogAuto
}

// IsTerminal reports whether f is a character device (a terminal), as
// opposed to a pipe or file a log collector reads.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// NewLogHandler is the handler for format writing to w at level: JSON, or
// text (key=value, the time to the second) for a person at a terminal;
// auto picks text when terminal.
func NewLogHandler(w io.Writer, format string, level slog.Leveler, terminal bool) slog.Handler {
	if format == LogText || (format == LogAuto && terminal) {
		return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: shortTime})
	}
	return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
}

// shortTime writes the top-level time as 15:04:05 in text logs.
func shortTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime {
		return slog.String(slog.TimeKey, a.Value.Time().Format("15:04:05"))
	}
	return a
}
