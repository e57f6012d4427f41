# gw — common tasks. `make run` and `make test` are the two set-up commands.
SHELL := /bin/bash
GO ?= go
BIN := bin/gw
FUZZTIME ?= 10s
# make test fuzzes every target briefly so CI always fuzzes.
TEST_FUZZTIME ?= 3s
LISTEN ?= 127.0.0.1:8080
MOCK_LISTEN ?= 127.0.0.1:9999
S3RVER_VERSION ?= 3.7.1
S3RVER_DIR ?= $(HOME)/.cache/gw/s3rver
FAKE_GCS_VERSION ?= v1.56.1
TOOLS_BIN ?= $(HOME)/.cache/gw/bin
OPENAI_NPM_DIR ?= $(HOME)/.cache/gw/openai-realtime
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# Demo credentials used by `make run` with examples/gw.yaml (the mock upstream accepts any key).
export OPENAI_API_KEY ?= sk-mock-openai
export ANTHROPIC_API_KEY ?= sk-mock-anthropic
export DEMO_CALLER_KEY ?= sk-gw-demo
export DEMO_TEAM_KEY ?= sk-gw-team
export DEMO_OIDC_HMAC ?= demo-hmac-secret-at-least-32-bytes-long
export MOCK_BASE ?= http://$(MOCK_LISTEN)
# Demo admin API (docs/ADMIN.md): key and listener used by `make run`.
ADMIN_LISTEN ?= 127.0.0.1:9180
export GW_ADMIN_KEY ?= demo-admin-key
# The mock's Bedrock signature check accepts only these (perf/mock/bedrock.go).
export BEDROCK_CREDENTIALS ?= {"access_key_id":"AKIAMOCKBEDROCK00001","secret_access_key":"mock/bedrock+secret/key/0000000000000000","region":"us-east-1"}
# A service account generated for tests only; its token_uri is the mock's (127.0.0.1:9999).
export VERTEX_SA ?= $(shell cat perf/mock/testdata/vertex_service_account.json)

.PHONY: all build run run-smoke test unit fuzz bench perf lint deps clean image deploy-test schema

all: build

# Static, like the image's binary (deploy/image): no libc mapped into the
# process, so `make perf` measures what ships.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/gw

# The container image as an OCI archive, built without a Docker daemon
# (deploy/image; docs/DEPLOY.md). Load it with docker/podman load, or push it
# with skopeo copy oci-archive:bin/gw-image.tar docker://REGISTRY/gw:TAG.
image:
	cd deploy && $(GO) run ./cmd/gwimage -repo .. -version $(VERSION) -out ../bin/gw-image.tar

# Start the mock upstream and gw on the example config. Ctrl-C stops both.
# gw starts once the mock accepts connections: the example's semantic router
# embeds its route examples through the mock while the config loads.
run: build
	@echo "mock upstream on $(MOCK_LISTEN); gw on $(LISTEN); caller key: $$DEMO_CALLER_KEY"
	@echo "admin API on http://$(ADMIN_LISTEN)/gw/admin (X-API-KEY: $$GW_ADMIN_KEY; store in ./data)"
	@set -m; ./$(BIN) mock -addr $(MOCK_LISTEN) -model-suffix -2024-08-06 & mock=$$!; \
	trap 'kill $$mock 2>/dev/null' EXIT INT TERM; \
	for i in $$(seq 100); do \
		(exec 3<>/dev/tcp/$(firstword $(subst :, ,$(MOCK_LISTEN)))/$(lastword $(subst :, ,$(MOCK_LISTEN)))) 2>/dev/null && break; \
		kill -0 $$mock 2>/dev/null || { echo "the mock upstream did not start on $(MOCK_LISTEN)"; exit 1; }; \
		sleep 0.1; \
	done; \
	./$(BIN) serve --resources-file examples/gw.yaml --listen $(LISTEN) --admin-listen $(ADMIN_LISTEN)

# Tests start real Redis processes (limiter) and etcd processes (admin/store);
# install the servers when missing.
deps:
	@command -v $(GO) >/dev/null || { echo "Go is required (https://go.dev/dl)"; exit 1; }
	@$(GO) mod download
	@command -v redis-server >/dev/null || { \
		echo "installing redis-server (apt)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq redis-server >/dev/null; }
	@# The etcd store tests (admin/store) start real etcd processes on free
	@# ports; Debian's etcd-server provides /usr/bin/etcd. Its package also
	@# starts a system etcd on :2379, which the tests do not need: stop it.
	@command -v etcd >/dev/null || { \
		echo "installing etcd-server (apt)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq etcd-server >/dev/null && \
		{ $$SUDO systemctl disable --now etcd >/dev/null 2>&1 || true; }; }
	@# Usage exporter tests write to a real S3-compatible server (s3rver, npm;
	@# about 20 s to install, kept across runs under $(S3RVER_DIR)).
	@[ -x $(S3RVER_DIR)/node_modules/.bin/s3rver ] || { \
		command -v npm >/dev/null || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
			$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq npm >/dev/null; }; \
		echo "installing s3rver@$(S3RVER_VERSION) (npm) into $(S3RVER_DIR)"; \
		mkdir -p $(S3RVER_DIR) && npm install --prefix $(S3RVER_DIR) --no-audit --no-fund --silent s3rver@$(S3RVER_VERSION) >/dev/null; }
	@# The GCS exporter's cloud-identity test uploads to a real Cloud Storage
	@# emulator (fake-gcs-server, built from the Go module proxy into
	@# $(TOOLS_BIN); a few minutes the first time, kept across runs).
	@[ -x $(TOOLS_BIN)/fake-gcs-server ] || { echo "building fake-gcs-server@$(FAKE_GCS_VERSION) into $(TOOLS_BIN)"; \
		GOBIN=$(TOOLS_BIN) GOFLAGS= $(GO) install github.com/fsouza/fake-gcs-server@$(FAKE_GCS_VERSION); }
	@# The status page test (cmd/gw) drives headless Chromium through chromedp.
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
		echo "installing chromium (apt)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }
	@# The Realtime e2e test drives the official openai npm SDK (openai-go has no Realtime client).
	@[ -f $(OPENAI_NPM_DIR)/node_modules/openai/realtime/ws.js ] || { \
		echo "installing openai + ws (npm) into $(OPENAI_NPM_DIR)"; \
		mkdir -p $(OPENAI_NPM_DIR) && npm install --prefix $(OPENAI_NPM_DIR) --no-audit --no-fund --silent openai@7.55.0 ws@8.23.0 >/dev/null; }

test: deps lint unit deploy-test run-smoke fuzz-short

# The front door: make run on the example config answers a chat call.
run-smoke:
	@bash .ci/run-smoke

# cmd/gw's end-to-end tests take minutes under -race on 2 cores (the usage
# outage test alone runs two); go test's default 10-minute limit is too tight.
unit:
	$(GO) test -race -count=1 -timeout 25m ./...
	@# Race builds do socket I/O through the net package (edge/rawsock):
	@# the raw-syscall path gw ships with is tested here, unit and e2e. The
	@# allocation guards (test files built with !race: the race detector
	@# allocates and drops sync.Pool items) run here too, in every package
	@# that has them.
	$(GO) test -count=1 ./edge/rawsock ./adapters/upstream $(NORACE_PKGS)
	GW_E2E_NORACE=1 $(GO) test -count=1 -timeout 15m -run '$(NORACE_E2E)' ./cmd/gw

# Packages with tests that only a non-race build runs (allocation guards).
NORACE_PKGS = $(sort $(dir $(shell grep -rl --include='*_test.go' '^//go:build !race' . )))

# The end-to-end tests run again on a plain (non-race) gw build.
NORACE_E2E = Passthrough|Stream|Proxy|Gateway|MCP|Realtime|Bedrock|Vertex|Guard|Upload|Shutdown|Readme|UsageExport

# deploy/ is its own module (Helm and the Kubernetes API types stay out of
# gw's go.mod): its image and chart tests run here.
deploy-test:
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 -timeout 20m ./...

# Run every Fuzz* target in fuzz/ for FUZZTIME each.
fuzz:
	@$(MAKE) --no-print-directory fuzz-run T=$(FUZZTIME)

fuzz-short:
	@$(MAKE) --no-print-directory fuzz-run T=$(TEST_FUZZTIME)

# The fuzz package is built once, instrumented, and each target run from
# that binary (in fuzz/, where its corpus lives): a go test -fuzz per target
# would relink it every time, which on 2 cores cost more than the fuzzing.
# A run that ends in Go's own "context deadline exceeded" without writing a
# failing input is a known toolchain flake (golang/go#75804, fixed in Go 1.27),
# not a finding: it is retried once, and a second such run is reported and
# passed, as a real finding always writes its input (a hung or crashed worker
# too). Any written crasher, or any other failure, fails the target.
fuzz-run:
	@set -e; targets=$$($(GO) test ./fuzz -list '^Fuzz' | grep '^Fuzz'); \
	bin=$$(mktemp -d)/fuzz.test; cache=$$($(GO) env GOCACHE)/fuzz/gw/fuzz; \
	$(GO) test -c -o $$bin -fuzz="^$$(echo "$$targets" | head -1)$$" ./fuzz; \
	for t in $$targets; do \
		echo "fuzz $$t ($(T))"; \
		for try in 1 2; do \
			if (cd fuzz && $$bin -test.run='^$$' -test.fuzz="^$$t$$" -test.fuzztime=$(T) -test.fuzzcachedir=$$cache) >/tmp/gw-fuzz-$$t.log 2>&1; then break; fi; \
			if grep -q 'context deadline exceeded' /tmp/gw-fuzz-$$t.log && ! grep -q 'Failing input written' /tmp/gw-fuzz-$$t.log; then \
				if [ $$try = 1 ]; then echo "  toolchain flake (golang/go#75804); retrying"; continue; fi; \
				echo "  toolchain flake again, no input written: no finding"; break; fi; \
			cat /tmp/gw-fuzz-$$t.log; exit 1; \
		done; \
	done; rm -rf $$(dirname $$bin)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The perf suite: gw pinned to core 0, the mock and the load generator on core 1
# (taskset from util-linux; without it nothing is pinned), except scenarios 8-10,
# which unpin everything (shared cores). A report, not a gate. Other gateways join
# scenario 8 with PERF_ARGS='-mock-addr 127.0.0.1:9999 -peer name=URL,...'.
perf: build
	$(GO) build -o bin/gwperf ./perf/cmd/gwperf
	$(GO) build -o bin/floorproxy ./perf/cmd/floorproxy
	@if command -v taskset >/dev/null; then taskset -c 1 ./bin/gwperf -gw bin/gw -floor bin/floorproxy $(PERF_ARGS); else ./bin/gwperf -gw bin/gw -floor bin/floorproxy -gw-core -1 -mock-core -1 $(PERF_ARGS); fi

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Rewrite schema/gw.schema.json from the loader (`gw schema`); TestSchemaCommand
# fails when the committed copy differs.
schema:
	$(GO) run ./cmd/gw schema > schema/gw.schema.json

clean:
	rm -rf bin
