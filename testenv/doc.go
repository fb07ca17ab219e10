// Package testenv gives tests real PostgreSQL and Redis servers. One pair of
// throwaway servers is shared by a test binary (or by the whole `make test`
// run, through ATTESTD_TEST_POSTGRES_URL and ATTESTD_TEST_REDIS_URL); each
// test gets its own database and its own Redis key prefix, so packages and
// tests run in parallel without seeing each other. Tests that need to kill a
// server get a dedicated one with OwnPostgres or OwnRedis.
package testenv
