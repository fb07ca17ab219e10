// Package testenv gives tests real PostgreSQL and Redis servers, shared by
// a test binary or by a whole `make test` run; each test gets its own
// database and Redis key prefix, so tests run in parallel without seeing
// each other. Tests that kill a server get a dedicated one. It also holds
// the small helpers every package's tests share: WaitFor and WaitForState
// (poll until a condition holds, with Patience, an outer deadline only a
// hang reaches; the latter's failure names the last state it saw), Must,
// Output, TempDir. It is for tests only: the
// attestd binary links none of it (cmd/attestd's
// TestBinaryLinksNoTestSupport).
package testenv
