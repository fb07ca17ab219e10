package dataset

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/config"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:///path: the local filesystem (make run)
	_ "gocloud.dev/blob/s3blob"   // s3://bucket?endpoint=…: any S3-compatible store
)

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_DATASET_BUCKET", Default: "(none: the dataset is off)", Help: "where the daily dataset's files live, as a gocloud.dev blob URL: s3://BUCKET?region=…[&endpoint=http://host:port&use_path_style=true] for any S3-compatible store (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the machine's role), file:///absolute/path for a directory; the same on attestd dataset (which writes) and API nodes (which serve /dataset/ from it); unset: the dataset is off and /dataset/ answers 503"},
	{Name: "ATTESTD_DATASET_PREFIX", Default: "dataset/v1/", Help: "the key prefix of the dataset's objects in the bucket"},
	{Name: "ATTESTD_DATASET_INTERVAL", Default: "1m", Help: "how often attestd dataset looks for a day it can cut (a closed day whose last leaf a witnessed checkpoint covers)"},
	{Name: "ATTESTD_DATASET_METRICS_ADDR", Default: "127.0.0.1:9093", Help: "attestd dataset's /metrics and /health; empty disables it"},
	{Name: "ATTESTD_DATASET_RATE", Default: "20", Help: "requests per second one client IP may make to /dataset/ on one node (a burst of 10 times that); outside the API's limit; 0: no limit"},
	{Name: "ATTESTD_DATASET_MIB_RATE", Default: "32", Help: "MiB per second one client IP may download from /dataset/ on one node (a burst of 10 times that; a request is allowed while the address is not in debt, and its length is then owed); 0: no limit"},
}

// Config configures the dataset's producer and server.
type Config struct {
	// Bucket is the blob URL; "" means the dataset is off.
	Bucket string
	// Prefix is the objects' key prefix (ending in /).
	Prefix   string
	Interval time.Duration
	// MetricsAddr is the producer's internal listener ("": none).
	MetricsAddr string
	// Rate is requests per second per client IP; MiBRate MiB per second.
	Rate, MiBRate int
}

// Enabled reports whether a bucket is configured.
func (c Config) Enabled() bool { return c.Bucket != "" }

// ErrOff explains why /dataset/ answers 503 on a node without a bucket.
var ErrOff = fmt.Errorf("the dataset is off: set ATTESTD_DATASET_BUCKET (docs/dataset.md)")

// ConfigFromEnv reads Vars.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	c := Config{
		Bucket:      e.String("ATTESTD_DATASET_BUCKET", ""),
		Prefix:      e.String("ATTESTD_DATASET_PREFIX", "dataset/v1/"),
		Interval:    e.Duration("ATTESTD_DATASET_INTERVAL", time.Minute, 100*time.Millisecond, 24*time.Hour),
		MetricsAddr: "127.0.0.1:9093",
		Rate:        e.Int("ATTESTD_DATASET_RATE", 20, 0, 1000000),
		MiBRate:     e.Int("ATTESTD_DATASET_MIB_RATE", 32, 0, 1<<20),
	}
	if v, set := e.Lookup("ATTESTD_DATASET_METRICS_ADDR"); set {
		c.MetricsAddr = v
	}
	if c.Bucket != "" {
		if u, err := url.Parse(c.Bucket); err != nil || (u.Scheme != "s3" && u.Scheme != "file") {
			e.Fail("ATTESTD_DATASET_BUCKET", "want an s3:// or file:// blob URL (docs/dataset.md)")
		}
	}
	if !strings.HasSuffix(c.Prefix, "/") || strings.HasPrefix(c.Prefix, "/") || strings.Contains(c.Prefix, "..") {
		e.Fail("ATTESTD_DATASET_PREFIX", "want a relative key prefix ending in / (for example dataset/v1/)")
	}
	return c, e.Err()
}

// OpenBucket opens the configured bucket under its prefix.
func (c Config) OpenBucket(ctx context.Context) (*blob.Bucket, error) {
	b, err := blob.OpenBucket(ctx, c.Bucket)
	if err != nil {
		return nil, fmt.Errorf("open the dataset's bucket: %w", err)
	}
	return blob.PrefixedBucket(b, c.Prefix), nil
}
