# attestd: two commands matter. `make run` brings everything up locally with
# demo data; `make test` runs the whole suite against throwaway servers.
GO      ?= go
BIN     := bin/attestd
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/attestd/attestd/internal/buildinfo.Version=$(VERSION)
# Every go command these targets run (tests' own builds of the binary and tools
# included) leaves the checkout's path out of what it compiles: the build cache
# then serves a fresh clone what it compiled for any other. With the path in the
# cache key, each clean clone (CI's) compiled every package of the module again,
# with and without the race detector: about half the CPU of make test.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
# The race detector runs on every package whose own (non-test) code starts
# goroutines, longest-running first so the slowest package starts at once;
# docs' TestRacePackagesAreTheConcurrentOnes keeps this list true. Every other
# package runs without it, in the plain half.
RACE_PKGS := ./internal/translog ./app ./indexer ./internal/webhook ./internal/stream ./internal/dataset \
             ./internal/premium ./internal/mcp ./internal/store ./internal/devtools/seaweed ./ratelimit ./internal/node \
             ./internal/apikey ./cache ./x402/verifier ./internal/purge ./internal/pubsub ./internal/devtools/devnet ./internal/inprocess
TEST_TIMEOUT ?= 10m

.PHONY: build run reset test test-race test-plain lint bench fuzz vet fmt clean image cluster answers screenshot

build:
	@test -e $(BIN) || echo "Building $(BIN) for the first time: Go compiles attestd and all its dependencies (Solana, Postgres, Redis, S3, Parquet clients...), a minute or two on a fresh checkout; later builds reuse the build cache and take seconds."
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/attestd

## image: a static binary in a FROM scratch image (deploy/Containerfile), built with podman or docker
IMAGE   ?= attestd:$(VERSION)
ENGINE  ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
# podman here needs the runc runtime and explicit ulimits; docker ignores neither flag set.
ENGINE_FLAGS ?= $(if $(findstring podman,$(ENGINE)),--runtime runc,)
BUILD_FLAGS  ?= --format docker --ulimit nofile=1024:1024 --ulimit nproc=1024:1024
image:
	rm -rf bin/image && mkdir -p bin/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/image/attestd ./cmd/attestd
	cp /etc/ssl/certs/ca-certificates.crt bin/image/
	$(ENGINE) $(ENGINE_FLAGS) build $(if $(findstring podman,$(ENGINE)),$(BUILD_FLAGS),) -f deploy/Containerfile -t $(IMAGE) bin/image

## cluster: the fleet on this machine (nginx, 3 serve, 2 index, 2 worker, 1 dataset with SeaweedFS as its S3 store, Redis or CLUSTER=redis-cluster, Postgres + replica); Ctrl-C stops it
cluster: build
	./$(BIN) cluster $(if $(filter redis-cluster,$(CLUSTER)),-redis-cluster,)

## run: Postgres and Redis under .run/ (Postgres data in /var/tmp when its account cannot reach .run/), demo data, the API on 127.0.0.1:8080 (Ctrl-C stops all)
run: build
	./$(BIN) local

## reset: delete the demo data make run keeps (.run/, and its PostgreSQL data under /var/tmp when there); refused while make run runs
reset: build
	./$(BIN) local --reset

## test: the whole suite against one throwaway Postgres and Redis, and make lint. The two halves run side by side
## (each package has its own databases and Redis prefix): one after the other, the waits of each (on
## servers, browsers and timers) left the cores idle. Each half's output is printed whole when it ends.
test: build
	./$(BIN) stores -- $(MAKE) --no-print-directory -j3 --output-sync=target test-plain test-race lint

race-list = $(shell $(GO) list $(RACE_PKGS))

# The browser tests (cmd/attestd) run four at a time: each waits on its own Chromium and node.
test-plain:
	$(GO) test -count=1 -parallel 4 -timeout $(TEST_TIMEOUT) $(filter-out $(race-list),$(shell $(GO) list ./...))
	# Allocation counts mean nothing under -race: this one runs without it.
	$(GO) test -count=1 -run '^TestHotPathsAllocateNothing$$' ./app

# Three packages at a time, four tests each: these tests mostly wait (on rates, timers,
# servers), so more of them side by side fill the cores the waiting leaves idle.
test-race:
	$(GO) test -race -count=1 -p 3 -parallel 4 -timeout $(TEST_TIMEOUT) $(race-list)

## answers: regenerate openapi/testdata/answers, one recorded answer of every operation and status that
## the clients tests (openapi/answers_test.go, clients_test.go) validate and decode: first what
## TestDriveEveryOperation provokes, then the first answer of every other one the packages' tests receive
ANSWERS     ?= $(CURDIR)/openapi/testdata/answers
ANSWER_PKGS := ./app/ ./internal/apikey/ ./internal/premium/ ./internal/web/ ./internal/webhook/ ./internal/webhookapi/ ./x402/x402fiber/ ./client/
answers: build
	rm -rf $(ANSWERS)
	./$(BIN) stores -- $(GO) test -count=1 -run '^TestDriveEveryOperation$$' ./openapi -args -record -answers=$(ANSWERS)
	ATTESTD_OPENAPI_RECORD=$(ANSWERS) ./$(BIN) stores -- $(GO) test -count=1 -p 1 -timeout $(TEST_TIMEOUT) $(ANSWER_PKGS)

## screenshot: the README's picture of the home page (docs/img/explorer.png) and the first screen of every page at
## 390 and 1440 px (docs/img/pages/), taken in headless Chromium from what make run shows (`attestd local`: its chain,
## indexer and witnessed log on), each page held to the layout checks on the way, and stamped with the version of the
## look they show (docs' TestREADMEScreenshotIsCurrent checks the README's)
screenshot: build
	ATTESTD_README_SCREENSHOT=docs/img/explorer.png ATTESTD_PAGE_SCREENSHOTS=docs/img/pages $(GO) test -count=1 -timeout 20m -run '^TestBrowserREADMEScreenshot$$' ./cmd/attestd

## bench: bounded load runs on loopback (docs/performance.md)
bench: build
	./bench/run.sh

## fuzz: a short run of every fuzz target (seeds that found bugs live in testdata/fuzz)
fuzz:
	./bench/fuzz.sh

## lint: go vet and staticcheck (the go.mod tool dependency) over all code, tests included; part of make test
lint:
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w .

clean:
	rm -rf bin
