# tabwarden — see README.md.
SHELL := /usr/bin/env bash
GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
# Test packages are run one at a time: the machine has 2 cores and each package
# starts its own kube-apiserver or Chromium.
GOTEST_FLAGS ?= -p 1 -count=1 -timeout 30m

.PHONY: plugin image image-chromium image-check all build generate manifests verify vet test test-go test-node test-deps run demo bench bench-short bench-deps bench-agents bench-agents-deps envtest chromium clean lint fuzz partition chaos

all: build

## build: the tabwarden binary into bin/.
build:
	$(GO) build -o bin/tabwarden ./cmd/tabwarden

## plugin: kubectl-tabwarden into bin/, then next to kubectl when that directory is writable (else how).
plugin:
	$(GO) build -o bin/kubectl-tabwarden ./cmd/kubectl-tabwarden
	install -m 0755 hack/kubectl_complete-tabwarden bin/kubectl_complete-tabwarden
	@kubectl=$$(command -v kubectl || true); dir=$$(dirname "$${kubectl:-/nonexistent/kubectl}"); \
	if [ -n "$$kubectl" ] && [ -w "$$dir" ]; then \
		install -m 0755 bin/kubectl-tabwarden bin/kubectl_complete-tabwarden "$$dir/" && \
		echo "installed $$dir/kubectl-tabwarden and its completion: try kubectl tabwarden --help, kubectl tabwarden <TAB>"; \
	else \
		echo "built bin/kubectl-tabwarden and bin/kubectl_complete-tabwarden; put both on your PATH, for example:"; \
		echo "  sudo install -m 0755 bin/kubectl-tabwarden bin/kubectl_complete-tabwarden $${kubectl:+$$dir}$${kubectl:-/usr/local/bin}/"; \
		echo "then: kubectl tabwarden --help   (kubectl plugin list shows it)"; \
	fi

## image: the tabwarden image (Dockerfile; needs docker): make image IMAGE=<registry>/tabwarden TAG=<tag>
IMAGE ?= tabwarden
TAG ?= dev
CHROMIUM_IMAGE ?= tabwarden-chromium
image:
	docker build --build-arg VERSION=$(TAG) -t $(IMAGE):$(TAG) .

## image-chromium: the pool's browser image (hack/chromium-image: Debian's Chromium, non-root, and tabwarden's cdp-bridge).
image-chromium:
	docker build --build-arg VERSION=$(TAG) -f hack/chromium-image/Dockerfile -t $(CHROMIUM_IMAGE):$(TAG) .

## image-check: without docker, the Dockerfiles checked (pinned bases, non-root) and their go build run,
## and config/default checked and applied to a real kube-apiserver with each role under its ServiceAccount.
image-check: envtest
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh)" $(GO) test -count=1 ./test/deploy

## generate: deepcopy functions for the API types.
generate:
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

## manifests: CRDs into crds/; one ClusterRole per role (and its namespaced lease Role)
## into config/rbac/, from the +kubebuilder:rbac markers of controllers/rbac.go and
## internal/agent/rbac.go.
manifests:
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=crds
	$(CONTROLLER_GEN) rbac:roleName=tabwarden-controller,fileName=controller_role.yaml paths=./controllers/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=tabwarden-agent,fileName=agent_role.yaml paths=./internal/agent/... output:rbac:artifacts:config=config/rbac

## lint: golangci-lint with the Kubernetes API linter (.golangci.yml), built pinned by hack/lint.sh
## into a cache outside the repo when missing.
lint:
	"$$(hack/lint.sh)" run ./...

## verify: fail when generated files are stale, the code is not formatted, or vet or lint finds something.
verify: generate manifests vet lint
	@test -z "$$(gofmt -l api controllers cmd internal hack test extension 2>/dev/null)" || { echo "gofmt needed:"; gofmt -l api controllers cmd internal hack test extension; exit 1; }
	@git diff --exit-code -- api/v1alpha1/zz_generated.deepcopy.go crds config/rbac/controller_role.yaml config/rbac/agent_role.yaml || { echo "generated files are stale: run 'make generate manifests' and commit the result"; exit 1; }

## vet: go vet.
vet:
	$(GO) vet ./...

## envtest: build kube-apiserver and etcd from source (cached outside the repo).
envtest:
	@hack/envtest.sh >/dev/null

## chromium: install Debian's Chromium when it is missing.
chromium:
	@hack/chromium.sh

## test: every test, against a real kube-apiserver, real Chromium and the real extension.
test: envtest chromium test-node test-deps test-go

## test-deps: what the Go tests run besides Chromium and the API server: the MCP
## Inspector's CLI (test/e2e/mcp), the newest that runs on the machine's Node and the
## newest of all with the Node 22 it needs, each pinned in its package-lock.json.
test-deps:
	cd test/e2e/mcp/inspector && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund --silent; }
	cd test/e2e/mcp/inspector-latest && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund --silent; }

test-go:
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh)" $(GO) test $(GOTEST_FLAGS) ./...

test-node:
	node --test extension/test/*.test.mjs

## fuzz: the model-based fuzz of the whole system (envtest + the fake browser):
## FUZZ_OPS operations from FUZZ_SEED, the episodes split across FUZZ_SHARDS
## processes (same episodes and seeds as one process); a failing episode is
## minimized and printed with the flags that replay it. FUZZ_RESULT names a file
## for the summary. `make test` runs a short seed run.
FUZZ_OPS ?= 100000
FUZZ_SEED ?= 1
FUZZ_SHARDS ?= 4
FUZZ_RESULT ?=
fuzz: envtest
	hack/fuzz.sh $(FUZZ_OPS) $(FUZZ_SEED) $(FUZZ_SHARDS) $(FUZZ_RESULT)

## partition: the partition suite at full length (agent ↔ API server cut for 30 s
## and for the shipped 40 s grace + 30 s, unreachable, lossy; agent ↔ browser).
## `make test` runs it short.
partition: envtest
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh)" $(GO) test ./test/fuzz -run '^TestPartitions$$' -count=1 -v -timeout 30m -args -partition-full

## chaos: CHAOS_LIFECYCLES session lifecycles on real Chromium with kill -9 of the
## controller and agent processes and Chromium crashes (CHAOS_FAULT_RATE per
## lifecycle). `make test` runs a short variant (10 lifecycles, 3 faults).
CHAOS_LIFECYCLES ?= 200
CHAOS_FAULT_RATE ?= 0.5
CHAOS_SEED ?= 1
chaos: envtest chromium
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh)" $(GO) test -count=1 -timeout 0 -v -run TestChaos ./test/chaos -args -lifecycles $(CHAOS_LIFECYCLES) -fault-rate $(CHAOS_FAULT_RATE) -seed $(CHAOS_SEED)

## run: the embedded control plane, the controller, an agent and a headless Chromium.
run: envtest chromium build
	bin/tabwarden up

## demo: play the incident step by step against the tabwarden up of `make run` (in another terminal),
## or, when none runs, against one started for the demo: make demo DEMO_PAUSE=0s to go fast.
DEMO_PAUSE ?= 2s
demo: envtest chromium build
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh)" bin/tabwarden demo --start --pause $(DEMO_PAUSE)

## bench: how fast tabwarden adopts and cleans up, against raw CDP, Playwright and the API server's floor.
bench: envtest chromium bench-deps
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh)" $(GO) run ./test/bench

## bench-short: the same in under two minutes, for a quick look.
bench-short: envtest chromium bench-deps
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh)" $(GO) run ./test/bench -short

bench-deps:
	cd test/bench/node && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund --silent; }

## bench-agents: the same scripted tasks through tabwarden's MCP server, chrome-devtools-mcp and Playwright MCP,
## each on a fresh headless Chromium; the table on stdout and in bench/results/<date>-agents.md.
bench-agents: envtest chromium bench-agents-deps
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh)" $(GO) run ./test/benchagents -write

# The peers, pinned in test/benchagents/node/package-lock.json; they use the bench's Chromium, never a download of their own.
bench-agents-deps:
	cd test/benchagents/node && { [ node_modules/.package-lock.json -nt package-lock.json ] || \
		PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --silent; }

clean:
	rm -rf bin .tabwarden
