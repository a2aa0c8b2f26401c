# Canopy — `make help` lists the targets.

KUBE_VERSION ?= 1.37.1
ENVTEST_ASSETS ?= $(CURDIR)/bin/k8s/$(KUBE_VERSION)
CONTROLLER_GEN ?= $(CURDIR)/bin/controller-gen
GOLANGCI_LINT ?= $(CURDIR)/bin/golangci-lint
GO_TEST_FLAGS ?= -timeout 45m -count=1
export KUBEBUILDER_ASSETS := $(ENVTEST_ASSETS)
# A wait a test writes without a bound of its own (gomega's Eventually) gets
# a minute rather than gomega's 1 s, which is a guess at the machine's speed:
# on a busy 2-core machine the addon manager once took longer than a second
# to create its ClusterManagementAddOn.
export GOMEGA_DEFAULT_EVENTUALLY_TIMEOUT ?= 1m

.DEFAULT_GOAL := help
SHELL := /usr/bin/env bash -o pipefail

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC into deploy/ and copy OCM's CRDs.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=deploy/crds
	$(CONTROLLER_GEN) rbac:roleName=canopy-hub paths="./cmd/hub/...;./pkg/hub/..." output:rbac:artifacts:config=deploy/hub/rbac
	$(CONTROLLER_GEN) rbac:roleName=canopy-agent paths="./cmd/spoke/...;./pkg/spoke/..." output:rbac:artifacts:config=deploy/spoke/rbac
	$(CONTROLLER_GEN) rbac:roleName=canopy-agent-enforcement paths=./deploy/spoke/rbac output:rbac:artifacts:config=deploy/spoke/rbac/enforcement
	hack/copy-ocm-crds.sh
	@# IMAGE=registry/repo@sha256:... pins deploy/hub's and deploy/spoke's
	@# images: entry (the hub, the agents the addon installs, the agent).
	$(if $(IMAGE),go run ./hack/image set-image -image '$(IMAGE)' deploy/hub deploy/spoke)

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -s -w $$(git ls-files --cached --others --exclude-standard '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml: govet, staticcheck, errcheck, gosec, ...).
	$(GOLANGCI_LINT) run ./...

.PHONY: docs
docs: ## Regenerate docs/cli.md from kubectl-canopy's own help.
	go test -count=1 -run '^TestCLIReference$$' ./cmd/kubectl-canopy -update

.PHONY: verify
verify: ## Fail when a generated file or go.mod is stale.
	hack/verify-generated.sh

##@ Test

.PHONY: test
test: ## Run every test (unit, envtest, e2e) against real API servers, then fuzz briefly; ends with the time of each phase and the slowest packages.
	@# hack/testrun runs the phases in order: assets, lint, verify,
	@# go test $(GO_TEST_FLAGS) ./..., make fuzz FUZZTIME=2000x.
	go run ./hack/testrun -go-test-flags '$(GO_TEST_FLAGS)' -fuzztime 2000x

# make test fuzzes each target for a number of inputs, not a duration: with
# a duration, Go 1.26's fuzz coordinator can fail a target with "context
# deadline exceeded" and no failing input when the deadline races a busy
# worker (go.dev/issue/75804, fixed in Go 1.27). 2000 inputs take under 10 s
# for the slowest target on 2 cores.
FUZZTIME ?= 10s

.PHONY: fuzz
fuzz: envtest-assets ocm-assets ## Run every Fuzz target for FUZZTIME each (make fuzz FUZZTIME=10m for a long run).
	@for file in $$(grep -rl --include='*_test.go' '^func Fuzz' api cmd internal pkg test | sort); do \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "go test -run '^\$$' -fuzz '^$$target\$$' -fuzztime $(FUZZTIME) ./$$(dirname $$file)"; \
			go test -count=1 -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) ./$$(dirname $$file) || exit 1; \
		done; \
	done

.PHONY: test-conformance
test-conformance: envtest-assets kubectl-assets conformance-assets ## Run OCM config-policy-controller's own e2e suite against the agent (CONFORMANCE_PROCS ginkgo processes, 8 by default).
	go test -count=1 -v -run '^TestUpstreamConfigurationPolicySuite$$' ./test/conformance

.PHONY: test-e2e
test-e2e: envtest-assets ocm-assets gatekeeper-assets ## Run the e2e suite (E2E_HUB_KUBECONFIG etc. select existing clusters).
	go test $(GO_TEST_FLAGS) ./test/e2e/... -ginkgo.v

BENCH_SCALE ?= 1
BENCH_TIMEOUT ?= 60m

.PHONY: bench
bench: envtest-assets ocm-assets build ## Measure propagation, hub templates, dependency latency and syncer convergence at fleet scale (BENCH_SCALE=0.1 for a quick run).
	BENCH_SCALE=$(BENCH_SCALE) go test -run '^$$' -bench . -benchtime 1x -timeout $(BENCH_TIMEOUT) -count=1 -v ./test/bench/

BENCH_SCALES ?= 0.1 0.3 1

.PHONY: bench-scale
bench-scale: envtest-assets ocm-assets build ## Run the benchmarks at each of BENCH_SCALES (0.1 0.3 1) and draw how each stage scales: docs/captures/scaling-*.png and a table of exponents.
	mkdir -p bin/bench-scale
	for s in $(BENCH_SCALES); do \
		BENCH_SCALE=$$s BENCH_OUT=$(CURDIR)/bin/bench-scale/run-$$s.json go test -run '^$$' -bench . -benchtime 1x -timeout $(BENCH_TIMEOUT) -count=1 -v ./test/bench/ || exit 1; \
	done
	go run ./hack/benchplot -out docs/captures $(foreach s,$(BENCH_SCALES),bin/bench-scale/run-$(s).json)

.PHONY: bench-compare
bench-compare: ## Print how each bench row changed: make bench-compare OLD=before.json[,before2.json] NEW=bench-results.json.
	go run ./hack/benchcompare -old "$(OLD)" -new "$(NEW)"

.PHONY: captures
captures: envtest-assets ## Regenerate the docs' captures (dashboard screenshots and answers, rollout status) into docs/captures from real test runs.
	CANOPY_CAPTURE_DIR=$(CURDIR)/docs/captures go test -count=1 -run 'TestDashboard|TestRolloutPolicySetAsUnit|TestRolloutPolicySetStopsOnMemberFailure' ./pkg/hub/dashboard ./pkg/hub/propagator

##@ Run

.PHONY: build
build: ## Build canopy-hub, canopy-agent and kubectl-canopy into bin/.
	go build -o bin/canopy-hub ./cmd/hub
	go build -o bin/canopy-agent ./cmd/spoke
	go build -o bin/kubectl-canopy ./cmd/kubectl-canopy

.PHONY: demo
demo: envtest-assets ocm-assets build ## Run Canopy locally: a hub, two managed clusters joining it, the examples, a compliance table.
	@# Note: a built binary, not go run: go run exits 1 when interrupted,
	@# whatever the demo returns, so Ctrl-C made make report an error.
	go build -o bin/canopy-demo ./hack/demo
	bin/canopy-demo

##@ Release

IMAGE_LAYOUT ?= bin/image

.PHONY: image
image: ## Build Canopy's image (canopy-hub, canopy-agent; linux/amd64, linux/arm64) as an OCI layout in bin/image, without a container engine.
	go run ./hack/image build -out $(IMAGE_LAYOUT)

.PHONY: image-push
image-push: image ## Push the image to IMAGE (IMAGE=registry/repo:tag make image-push) and print it pinned by digest.
	@test -n '$(IMAGE)' || { echo 'IMAGE is required: IMAGE=registry/repo:tag make image-push'; exit 1; }
	go run ./hack/image push -layout $(IMAGE_LAYOUT) -image '$(IMAGE)'

.PHONY: release-check
release-check: ## Build and check the image and the plugin archives for every release platform (make test builds this machine's only).
	CANOPY_ALL_PLATFORMS=1 go test $(GO_TEST_FLAGS) ./hack/image ./hack/plugin-dist

.PHONY: release
release: release-check image plugin-dist ## Check every platform, then build the image (bin/image) and the plugin archives (bin/dist).

.PHONY: plugin-dist
plugin-dist: ## Build kubectl-canopy's archives (linux, darwin x amd64, arm64), checksums.txt and the krew manifest canopy.yaml into bin/dist.
	go run ./hack/plugin-dist -out bin/dist

##@ Tools

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver, kube-controller-manager and etcd into bin/k8s/ (once; minutes the first time).
	KUBE_VERSION=$(KUBE_VERSION) $(if $(filter-out $(CURDIR)/bin/k8s/$(KUBE_VERSION),$(ENVTEST_ASSETS)),ENVTEST_ASSETS_DIR=$(ENVTEST_ASSETS)) hack/install-envtest-assets.sh

.PHONY: ocm-assets
ocm-assets: ## Build OCM's registration, work, placement and addon binaries into bin/ocm/ (once; minutes the first time).
	hack/install-ocm-binaries.sh

.PHONY: kubectl-assets
kubectl-assets: ## Build kubectl into bin/kubectl/, with which test/install runs docs/install.md (once; a minute or two the first time).
	KUBE_VERSION=$(KUBE_VERSION) hack/install-kubectl.sh

.PHONY: conformance-assets
conformance-assets: ## Build OCM config-policy-controller's own e2e suite into bin/conformance/, which test/conformance runs against the agent (once; minutes the first time).
	hack/install-conformance-suite.sh

.PHONY: gatekeeper-assets
gatekeeper-assets: ## Build Gatekeeper's manager and copy its CRDs into bin/gatekeeper/ (once; 15 minutes or more the first time).
	hack/install-gatekeeper.sh

$(GOLANGCI_LINT): hack/lint/go.mod
	cd hack/lint && go build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(CONTROLLER_GEN): hack/tools/go.mod
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen
