# Image URL to use all building/pushing image targets.
IMG ?= node-lifecycle-controller:latest

# CONTAINER_TOOL defines the container tool to be used for building images.
CONTAINER_TOOL ?= docker

# Setting SHELL to bash allows bash commands to be executed by recipes.
# Options are set to exit when a recipe line exits non-zero or a piped command fails.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.DEFAULT_GOAL := help

##@ General

# The help target prints out all targets with their descriptions organized
# beneath their categories. The categories are represented by '##@' and the
# target descriptions by '##'. The awk command is responsible for reading the
# entire set of makefiles included in this invocation, looking for lines of the
# file as xyz: ## something, and then pretty-format the target and help. Then,
# if there's a line with ##@ something, that gets pretty-printed as a category.
# More info on the usage of ANSI control characters for terminal formatting:
# https://en.wikipedia.org/wiki/ANSI_escape_code#SGR_parameters
# More info on the awk command:
# http://linuxcommand.org/lc3_adv_awk.php

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate the CRDs in config/crd/bases and the ClusterRole and Role in config/rbac from the markers.
	$(CONTROLLER_GEN) rbac:roleName=node-lifecycle-controller crd:allowDangerousTypes=true paths="./..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods for the API types under api/.
	$(CONTROLLER_GEN) object paths="./api/..."

.PHONY: fmt
fmt: ## Run go fmt against code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet against code.
	go vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint, on the module and on the demo's and the bench's (test/demo, test/bench).
	$(GOLANGCI_LINT) run
	cd test/bench && $(GOLANGCI_LINT) run ./...
	cd test/demo && $(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: manifests generate docs ## Check that generated code, manifests and reference pages, formatting and go.mod are as committed, that the Markdown files' links lead somewhere, that the maps of the code in docs/contributing.md and the controllers' doc.go name what exists (hack/docmaps), and that no binary is: regenerate, then fail on any difference.
	go mod tidy -diff
	cd test/outside && go mod tidy -diff
	cd test/bench && go mod tidy -diff
	cd test/demo && go mod tidy -diff
	cd test/tools/k8s-1.35 && go mod tidy -diff
	cd test/tools/k8s-1.36 && go mod tidy -diff
	cd hack/ociimage && go mod tidy -diff
	@unformatted=$$(gofmt -s -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "Not gofmt -s formatted:"; echo "$$unformatted"; exit 1; fi
	@git diff --exit-code -- api config docs/reference || { echo "make manifests generate docs changed the files above: commit what they generate"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- api config docs/reference); \
	if [ -n "$$untracked" ]; then echo "make manifests generate docs wrote files that are not committed:"; echo "$$untracked"; exit 1; fi
	go run ./hack/mdlinks $$(git ls-files '*.md')
	go run ./hack/docmaps -doc docs/contributing.md controllers/doc.go internal/controllers/nodehealth/doc.go
	@binaries=$$(git diff --cached --numstat $$(git hash-object -t tree /dev/null) | awk -F'\t' '$$1 == "-" { print $$3 }'); \
	if [ -n "$$binaries" ]; then echo "Binary files are tracked; build them into bin/ instead:"; echo "$$binaries"; exit 1; fi

.PHONY: docs
docs: ## Write the reference pages in docs/reference (flags, metrics, events, the NodeHealthPolicy API) from the code.
	go run ./hack/refdocs -dir docs/reference

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint and apply its fixes.
	$(GOLANGCI_LINT) run --fix

.PHONY: lint-config
lint-config: golangci-lint ## Verify the golangci-lint configuration.
	$(GOLANGCI_LINT) config verify

# KUBEBUILDER_ASSETS is the directory the test targets (test, test-e2e,
# test-faults) take the control plane from, kube-apiserver, etcd and
# kube-controller-manager: bin/, where envtest-assets builds them from source,
# unless it is set in the environment or on the command line, to another
# checkout's bin/ or a directory `bin/setup-envtest use` filled, say. Then they
# build no control plane, and only check that the directory holds all three
# (setup-envtest downloads no kube-controller-manager, which the e2e specs of
# the dry run start: add one of the same minor). test-compat, bench, demo and
# release stay on bin/.
ifeq ($(strip $(KUBEBUILDER_ASSETS)),)
override KUBEBUILDER_ASSETS = $(LOCALBIN)
ENVTEST_ASSETS_TARGET := envtest-assets
else
ENVTEST_ASSETS_TARGET := require-envtest-assets
endif

# E2E_PROCS is how many processes the e2e suite's specs are spread over,
# each with a control plane of its own. The specs spend most of their time
# waiting out short grace periods, so four fit on two cores.
E2E_PROCS ?= 4
E2E_GINKGO = KUBEBUILDER_ASSETS="$(abspath $(KUBEBUILDER_ASSETS))" $(GINKGO) -p --procs=$(E2E_PROCS) -race --timeout=30m

.PHONY: test
test: $(ENVTEST_ASSETS_TARGET) kustomize helm image ginkgo kubebuilder kubemark ## Run every test with the race detector, against the control plane in KUBEBUILDER_ASSETS (bin/, built from source, unless set; test/deploy renders config/ with bin/kustomize and the chart with bin/helm; test/image opens the archive `make image` wrote; test/kubebuilder runs bin/kubebuilder on a copy of the tree): the packages, then the e2e suite over E2E_PROCS (4) processes, then test/outside, a module of its own that uses only the public packages (and whose module graph must hold none of the demo's and the bench's dependencies), then the demo's and the bench's own tests, modules of their own too.
	KUBEBUILDER_ASSETS="$(abspath $(KUBEBUILDER_ASSETS))" IMAGE_ARCHIVE="$(IMAGE_ARCHIVE)" go test -race -count=1 -timeout 30m $$(go list ./... | grep -Ev '/test/(e2e|release)$$')
	$(E2E_GINKGO) ./test/e2e
	cd test/outside && KUBEBUILDER_ASSETS="$(abspath $(KUBEBUILDER_ASSETS))" go test -race -count=1 -timeout 5m ./...
	cd test/bench && go test -race -count=1 ./...
	cd test/demo && go test -race -count=1 ./...

.PHONY: test-e2e
test-e2e: $(ENVTEST_ASSETS_TARGET) ginkgo kubemark ## Run the e2e suite alone (test/e2e, the fault suite among it), as make test runs it: bin/ginkgo over E2E_PROCS (4) processes, each with a control plane of its own from KUBEBUILDER_ASSETS (bin/ unless set). Unlike kubebuilder's scaffold, no Kind cluster and no image.
	$(E2E_GINKGO) ./test/e2e

.PHONY: test-faults
test-faults: $(ENVTEST_ASSETS_TARGET) ginkgo ## Run the safety model's simulator (its named cases, and 1000 random fault sequences), then the fault suite on a real apiserver (apiserver crash, hang and odd answers, a stuck request, controller crashes, a leader stopped past its lease, leader failover, failover mid-partition, between two halves of one, and to a clock ten minutes ahead, attrition, lagging watch, partition, flapping, taint swap, clock skew, refused writes, pods replaced under their name, policy churn and holds, malformed objects); make test runs both.
	go test -race -count=1 ./internal/safety/sim
	$(E2E_GINKGO) --label-filter=faults ./test/e2e

# COMPAT_ASSETS are the control planes make test-compat runs the compat specs
# against, oldest first: each of K8S_MINORS, then bin/ itself (1.37).
COMPAT_ASSETS = $(foreach m,$(K8S_MINORS),$(LOCALBIN)/k8s-$(m)) $(LOCALBIN)
# COMPAT_SPECS is the label filter of the specs make test-compat runs on each
# minor: compat by default; empty runs the whole e2e suite, as make test does,
# on each (about 5 minutes a minor on two cores).
COMPAT_SPECS ?= compat
# COMPAT_FILTER leaves the real kubelets out on every minor: kubemark is
# built at 1.37, and a kubelet newer than its apiserver is not supported.
COMPAT_FILTER = $(if $(strip $(COMPAT_SPECS)),($(COMPAT_SPECS)) && !kubelet,!kubelet)

.PHONY: test-compat
test-compat: envtest-assets envtest-assets-minors ginkgo ## Run the e2e specs labelled compat (a node marked and tainted at its grace, pod eviction at its deadlines, a partially disrupted zone, the partition freeze, a maintenance hold, the dry run beside that minor's kube-controller-manager) against Kubernetes 1.35 (bin/k8s-1.35), 1.36 (bin/k8s-1.36) and 1.37 (bin/) in turn, over E2E_PROCS (4) processes, then lifecycletest's tests (the envtest helper): 6 specs and about a minute of helper tests, about 1m45s a minor and 5.5 minutes in all on two cores once built (envtest-assets-minors the first time adds about 8). COMPAT_SPECS= runs the whole e2e suite on each instead. Runs every minor even if one fails, then fails naming those that did.
	@failed=; for dir in $(COMPAT_ASSETS); do \
		echo "== compat specs against $$dir: k8s.io/kubernetes $$(go version -m $$dir/kube-apiserver | awk '$$2 == "k8s.io/kubernetes" { print $$3 }')"; \
		start=$$(date +%s); \
		KUBEBUILDER_ASSETS="$$dir" $(GINKGO) -p --procs=$(E2E_PROCS) -race --timeout=30m --label-filter='$(COMPAT_FILTER)' ./test/e2e || failed="$$failed $$dir"; \
		KUBEBUILDER_ASSETS="$$dir" go test -race -count=1 ./lifecycletest || failed="$$failed $$dir(lifecycletest)"; \
		echo "== $$dir: $$(( $$(date +%s) - start ))s"; \
	done; \
	if [ -n "$$failed" ]; then echo "compat specs failed against:$$failed"; exit 1; fi

# How many random fault sequences make simulate runs, and the seed of the
# first; a failure prints its seed, which SIM_SEED=<seed> SIM_SEQUENCES=1
# runs again.
SIM_SEQUENCES ?= 100000
SIM_SEED ?= 1
.PHONY: simulate
simulate: ## Run SIM_SEQUENCES (100000) random fault sequences from SIM_SEED (1) through the safety model's simulator, every invariant checked after every step (make test runs the first 1000); a failure prints its seed and a shortened sequence.
	go test -count=1 -timeout 0 ./internal/safety/sim -run '^TestRandomSequences$$' -sim.sequences=$(SIM_SEQUENCES) -sim.seed=$(SIM_SEED)

FUZZTIME ?= 30s
.PHONY: fuzz
fuzz: ## Run each fuzz test for FUZZTIME (30s); make test runs their checked-in seed corpora in testdata/fuzz.
	go test ./internal/health -run '^$$' -fuzz '^FuzzJudge$$' -fuzztime $(FUZZTIME)
	go test ./internal/eviction -run '^$$' -fuzz '^FuzzDeadline$$' -fuzztime $(FUZZTIME)
	go test ./internal/cmdline -run '^$$' -fuzz '^FuzzParseAndValidate$$' -fuzztime $(FUZZTIME)

# The side-by-side benchmark: how many simulated nodes, where its results go,
# and more of its flags (--runs, --steady, --only, --profile, --pods-per-node,
# --pod-status-every).
BENCH_NODES ?= 1000
BENCH_OUT ?= bin/bench
BENCH_ARGS ?=
BENCH_GO = KUBEBUILDER_ASSETS="$(abspath $(LOCALBIN))" go test -run='^$$' -bench=. -benchmem ./...
# The demo and the bench are modules of their own (test/demo, test/bench), so
# that their charting and statistics stay out of the library's go.mod: each
# is built into bin/ and run from here, where its default paths lead.
BENCH_UPSTREAM = go build -C test/bench -o $(LOCALBIN)/bench-cmd . && KUBEBUILDER_ASSETS="$(abspath $(LOCALBIN))" $(LOCALBIN)/bench-cmd --nodes=$(BENCH_NODES) --out=$(BENCH_OUT) $(BENCH_ARGS)

.PHONY: bench
bench: envtest-assets build kustomize ## Run the Go benchmarks (bench-go), then the side-by-side benchmark against upstream (bench-upstream), one after the other.
	$(BENCH_GO)
	$(BENCH_UPSTREAM)

.PHONY: bench-go
bench-go: envtest-assets ## Run every Go benchmark, without the tests, against the control plane in bin/ (the heartbeat cost per node-hour among them).
	$(BENCH_GO)

.PHONY: bench-upstream
bench-upstream: envtest-assets build kustomize ## Run upstream kube-controller-manager's node lifecycle controllers, ours with the same flags, and a floor that only watches Nodes and Leases, each on a fresh local control plane and BENCH_NODES (1000) fleet whose nodes each list 50 images and run 30 pods, each pod's status written every 5 minutes (--images-per-node, --pods-per-node, --pod-status-every), in 3 rounds that rotate the order (about an hour); table, JSON and chart in BENCH_OUT (bin/bench), more flags in BENCH_ARGS.
	$(BENCH_UPSTREAM)

# The cost model's runs: ours and the floor, one round each, on fleets of
# COST_SIZES nodes without pods and of 1,000 nodes with 30 pods a node whose
# statuses are written every 5 minutes and every 2m30s; each run's results
# go to COST_OUT/<size>, and the fit to COST_OUT/fit.md. 10000 is as far as a
# larger machine goes: on two cores, the apiserver cannot take that fleet's
# registrations and renewals.
COST_OUT ?= bin/cost
COST_SIZES ?= 1000 2000 5000

.PHONY: bench-cost
bench-cost: envtest-assets build kustomize ## Measure how ours and the floor grow with the fleet (COST_SIZES nodes without pods, 1,000 with 30 pods at two write rates; about 50 minutes on two cores), then fit CPU and peak RSS to the nodes over the runs without pods, the runs with pods set against that fit (test/bench/costmodel), into COST_OUT/fit.md.
	go build -C test/bench -o $(LOCALBIN)/bench-cmd .
	set -e; export KUBEBUILDER_ASSETS="$(abspath $(LOCALBIN))"; \
	for n in $(COST_SIZES); do \
		$(LOCALBIN)/bench-cmd --only=ours,floor --runs=1 --nodes=$$n --pods-per-node=0 --stop-percent=0.2 --out=$(COST_OUT)/$${n}x0; \
	done; \
	$(LOCALBIN)/bench-cmd --only=ours,floor --runs=1 --nodes=1000 --pods-per-node=30 --out=$(COST_OUT)/1000x30; \
	$(LOCALBIN)/bench-cmd --only=ours,floor --runs=1 --nodes=1000 --pods-per-node=30 --pod-status-every=2m30s --out=$(COST_OUT)/1000x30-churn
	go run -C test/bench ./costmodel $(abspath $(COST_OUT))/*/ > $(COST_OUT)/fit.md
	@echo "Fit written to $(COST_OUT)/fit.md"

# The demo runs real kubelets, kubemark's hollow nodes, when ARGS holds
# --kubelets=hollow, and then needs bin/kubemark, built only then: its first
# build takes minutes.
.PHONY: demo
demo: envtest-assets build $(if $(filter --kubelets=hollow,$(ARGS)),kubemark) ## Run the showcase: a local control plane, the controller and a 60-node simulated fleet through node, zone and total failures, drawn live; logs and timeline in bin/demo/. More flags in ARGS (--nodes, --zones); `make demo ARGS=--kubelets=hollow` plays it on 12 real kubelets (kubemark's hollow nodes, built into bin/kubemark first) with a 30s grace, in about 3.5 minutes (the simulated fleet: under 1.5).
	go build -C test/demo -o $(LOCALBIN)/demo-cmd .
	KUBEBUILDER_ASSETS="$(abspath $(LOCALBIN))" $(LOCALBIN)/demo-cmd $(ARGS)

##@ Build

# VERSION is the version the binary reports (--version) and the image and
# chart carry: the nearest tag, or the commit, by default.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GO_LDFLAGS = -s -X main.buildVersion=$(VERSION)

.PHONY: build
build: manifests generate fmt vet ## Build the controller binary into bin/node-lifecycle-controller, stamped with VERSION.
	CGO_ENABLED=0 go build -trimpath -ldflags="$(GO_LDFLAGS)" -o $(LOCALBIN)/node-lifecycle-controller .

.PHONY: run
run: manifests generate fmt vet ## Run the controller from your host against the cluster in $KUBECONFIG, without leader election; more flags in ARGS.
	go run . --leader-elect=false $(ARGS)

.PHONY: docker-build
docker-build: require-container-tool ## Build the container image IMG (default node-lifecycle-controller:latest) with CONTAINER_TOOL (docker); `make image` needs none.
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: docker-push
docker-push: require-container-tool ## Push the image IMG with CONTAINER_TOOL (docker).
	$(CONTAINER_TOOL) push $(IMG)

# PLATFORMS are the platforms docker-buildx builds the image for: those of a
# release, RELEASE_ARCHES (kubebuilder's scaffold adds linux/s390x and
# linux/ppc64le). BUILDX_BUILDER is the buildx builder it creates for that and
# removes after.
comma := ,
empty :=
space := $(empty) $(empty)
PLATFORMS ?= $(subst $(space),$(comma),$(addprefix linux/,$(RELEASE_ARCHES)))
BUILDX_BUILDER ?= node-lifecycle-controller-builder

.PHONY: docker-buildx
docker-buildx: require-container-tool ## Build the image IMG for each of PLATFORMS (linux/amd64,linux/arm64) with CONTAINER_TOOL buildx and push it, as kubebuilder's scaffold does: the build stage runs on the host's platform and cross-compiles. Needs buildx and a registry in IMG; `make image IMAGE_ARCH=<arch>` builds each as an OCI archive without Docker.
	@$(CONTAINER_TOOL) buildx version >/dev/null 2>&1 || { \
		echo "$(CONTAINER_TOOL) has no buildx: install the buildx plugin (https://docs.docker.com/build/buildx/), or build the image of one architecture without Docker with make image IMAGE_ARCH=<arch>"; exit 1; }
	trap 'rm -f Dockerfile.cross' EXIT; \
	sed -e '1 s/\(^FROM\)/FROM --platform=\$$\{BUILDPLATFORM\}/; t' -e ' 1,// s//FROM --platform=\$$\{BUILDPLATFORM\}/' Dockerfile > Dockerfile.cross; \
	$(CONTAINER_TOOL) buildx inspect $(BUILDX_BUILDER) >/dev/null 2>&1 || $(CONTAINER_TOOL) buildx create --name $(BUILDX_BUILDER); \
	status=0; \
	$(CONTAINER_TOOL) buildx build --builder=$(BUILDX_BUILDER) --push --platform=$(PLATFORMS) --tag $(IMG) -f Dockerfile.cross . || status=$$?; \
	$(CONTAINER_TOOL) buildx rm $(BUILDX_BUILDER) || true; \
	exit $$status

# require-container-tool stops a target that needs CONTAINER_TOOL, which this
# Makefile does not build, with a message when there is none.
.PHONY: require-container-tool
require-container-tool:
	@command -v $(firstword $(CONTAINER_TOOL)) >/dev/null 2>&1 || { \
		echo "CONTAINER_TOOL=$(CONTAINER_TOOL) is not installed: install Docker (with buildx for docker-buildx) or set CONTAINER_TOOL=podman; \`make image\` builds the image as an OCI archive without either"; exit 1; }

# The image is an OCI archive, built without Docker: IMAGE_ARCH is the
# architecture of its binary (the host's by default), IMG its name. Its labels
# and file times come from git, so two builds of one commit write the same bytes;
# SOURCE_DATE_EPOCH, when set, overrides the time.
IMAGE_ARCH ?= $(shell go env GOARCH)
IMAGE_ARCHIVE ?= $(LOCALBIN)/node-lifecycle-controller.oci.tar
IMAGE_SOURCE ?= https://github.com/nodelifecycle/node-lifecycle-controller
IMAGE_VERSION ?= $(VERSION)
IMAGE_REVISION ?= $(shell git rev-parse --verify -q HEAD 2>/dev/null || echo unknown)
IMAGE_CREATED ?= $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null))

.PHONY: image
image: ociimage ## Build the image IMG for IMAGE_ARCH into bin/node-lifecycle-controller.oci.tar, an OCI archive (skopeo copy oci-archive:, podman load), without Docker.
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build -trimpath -ldflags="-s -X main.buildVersion=$(IMAGE_VERSION)" -o $(LOCALBIN)/node-lifecycle-controller-linux-$(IMAGE_ARCH) .
	$(OCIIMAGE) --binary=$(LOCALBIN)/node-lifecycle-controller-linux-$(IMAGE_ARCH) --output=$(IMAGE_ARCHIVE) \
		--tag=$(IMG) --arch=$(IMAGE_ARCH) --source=$(IMAGE_SOURCE) \
		--version=$(IMAGE_VERSION) --revision=$(IMAGE_REVISION) --created=$(IMAGE_CREATED)

# CHART is the Helm chart of the installer, in the layout kubebuilder's helm
# plugin writes. With its default values it renders the objects of
# config/default but the Namespace (namespace.create adds it); test/deploy
# renders both and fails when they differ.
CHART ?= dist/chart

.PHONY: helm-lint
helm-lint: helm ## Lint the Helm chart in dist/chart, failing on warnings (make test does too).
	$(HELM) lint --strict $(CHART)

.PHONY: build-installer
build-installer: manifests generate kustomize-overlay ## Render config/default with the image IMG into dist/install.yaml, one file to kubectl apply.
	$(KUSTOMIZE) build $(OVERLAY) > dist/install.yaml

##@ Release

# A release is a semantic version tag, vX.Y.Z; RELEASE_IMAGE is the image
# repository it is published to, RELEASE_ARCHES its architectures.
RELEASE_IMAGE ?= ghcr.io/nodelifecycle/node-lifecycle-controller
RELEASE_ARCHES ?= amd64 arm64
RELEASE_DIR ?= dist/release/$(VERSION)

.PHONY: release
release: ociimage kustomize helm manifests ## Write into RELEASE_DIR (dist/release/VERSION) everything release VERSION publishes: an image for each of RELEASE_ARCHES as an OCI archive, an SPDX SBOM of each binary, install.yaml, crds.yaml, the packaged chart, release notes from CHANGELOG.md and SHA256SUMS; then test every artifact.
	@echo "$(VERSION)" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$' || { echo "VERSION=$(VERSION) is not a release version vX.Y.Z"; exit 1; }
	rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)
	@for arch in $(RELEASE_ARCHES); do \
		$(MAKE) --no-print-directory image IMAGE_ARCH=$$arch IMG=$(RELEASE_IMAGE):$(VERSION) IMAGE_VERSION=$(VERSION) \
			IMAGE_ARCHIVE=$(abspath $(RELEASE_DIR))/node-lifecycle-controller-$(VERSION)-linux-$$arch.oci.tar || exit 1; \
		go run ./hack/sbom --binary=$(LOCALBIN)/node-lifecycle-controller-linux-$$arch --version=$(VERSION) \
			--name=node-lifecycle-controller-$(VERSION)-linux-$$arch --created=$(IMAGE_CREATED) \
			> $(RELEASE_DIR)/node-lifecycle-controller-$(VERSION)-linux-$$arch.spdx.json || exit 1; \
	done
	$(MAKE) --no-print-directory kustomize-overlay IMG=$(RELEASE_IMAGE):$(VERSION)
	$(KUSTOMIZE) build $(OVERLAY) > $(RELEASE_DIR)/install.yaml
	$(KUSTOMIZE) build config/crd > $(RELEASE_DIR)/crds.yaml
	rm -rf $(RELEASE_DIR)/chart && cp -r $(CHART) $(RELEASE_DIR)/chart
	sed -i -e 's|^      repository: node-lifecycle-controller$$|      repository: $(RELEASE_IMAGE)|' \
		-e 's|^      tag: latest$$|      tag: $(VERSION)|' $(RELEASE_DIR)/chart/values.yaml
	$(HELM) package $(RELEASE_DIR)/chart --version $(patsubst v%,%,$(VERSION)) --app-version $(VERSION) -d $(RELEASE_DIR)
	rm -rf $(RELEASE_DIR)/chart
	go run ./hack/changelog --version=$(VERSION) CHANGELOG.md > $(RELEASE_DIR)/release-notes.md
	cd $(RELEASE_DIR) && sha256sum $$(ls | grep -v '^SHA256SUMS$$') > SHA256SUMS
	KUBEBUILDER_ASSETS="$(abspath $(LOCALBIN))" RELEASE_DIR="$(abspath $(RELEASE_DIR))" RELEASE_VERSION=$(VERSION) \
		RELEASE_IMAGE=$(RELEASE_IMAGE) go test -count=1 ./test/release
	@for arch in $(RELEASE_ARCHES); do \
		IMAGE_ARCHIVE=$(abspath $(RELEASE_DIR))/node-lifecycle-controller-$(VERSION)-linux-$$arch.oci.tar IMAGE_VERSION=$(VERSION) \
			go test -count=1 ./test/image || exit 1; \
	done

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: require-kubectl manifests kustomize ## Install the CRDs of config/crd (NodeHealthPolicy) into the cluster in the current kubeconfig context (needs kubectl).
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply -f -

.PHONY: uninstall
uninstall: require-kubectl manifests kustomize ## Remove the CRDs of config/crd, and with them every NodeHealthPolicy, from the cluster (needs kubectl). Call with ignore-not-found=true to ignore missing resources.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: require-kubectl manifests kustomize-overlay ## Deploy config/default (or INSTALLER=config/dry-run) with the image IMG to the cluster in the current kubeconfig context (needs kubectl).
	$(KUSTOMIZE) build $(OVERLAY) | $(KUBECTL) apply -f -

.PHONY: undeploy
undeploy: require-kubectl kustomize-overlay ## Remove config/default (or INSTALLER) from the cluster (needs kubectl). Call with ignore-not-found=true to ignore missing resources.
	$(KUSTOMIZE) build $(OVERLAY) | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

# require-kubectl stops a target that needs KUBECTL, which this Makefile does
# not build, with a message when there is none.
.PHONY: require-kubectl
require-kubectl:
	@command -v $(firstword $(KUBECTL)) >/dev/null 2>&1 || { \
		echo "KUBECTL=$(KUBECTL) is not installed: install kubectl (https://kubernetes.io/docs/tasks/tools/) or set KUBECTL to its path"; exit 1; }

# INSTALLER is the kustomize installer that deploy, undeploy and
# build-installer render: config/default, or config/dry-run for the dry run
# beside kube-controller-manager, the cut-over's first step.
INSTALLER ?= config/default

# OVERLAY is INSTALLER with the image set to IMG. It lives in the
# git-ignored dist/, so that setting the image leaves config/ untouched
# (kubebuilder's `kustomize edit set image` in config/manager would not).
# config/manager has already renamed the image placeholder controller to
# node-lifecycle-controller, so that is the name the overlay replaces.
OVERLAY := dist/overlay

.PHONY: kustomize-overlay
kustomize-overlay: kustomize
	@mkdir -p $(OVERLAY)
	@printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../$(INSTALLER)\n' > $(OVERLAY)/kustomization.yaml
	cd $(OVERLAY) && $(KUSTOMIZE) edit set image node-lifecycle-controller=$(IMG)

##@ Dependencies

## Location to install dependencies to.
LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

## Tool binaries.
KUBECTL ?= kubectl
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint
KUSTOMIZE ?= $(LOCALBIN)/kustomize
HELM ?= $(LOCALBIN)/helm
GINKGO ?= $(LOCALBIN)/ginkgo

## Tool versions.
# v0.23 is the controller-tools line built against k8s.io v0.37, as this module is.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
# v5.8.3 needs Go 1.27; v5.8.2 is the last that builds with this module's Go 1.26.
KUSTOMIZE_VERSION ?= v5.8.2
# Helm 4, whose module needs Go 1.26, as this one does.
HELM_VERSION ?= v4.3.1
# The ginkgo command must match the Ginkgo library the suites are built with.
GINKGO_VERSION ?= $(shell go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)
# The kubebuilder CLI that test/kubebuilder runs against a copy of the tree.
KUBEBUILDER_VERSION ?= v4.16.0
# setup-envtest is a module of its own in controller-runtime, tagged apart:
# v0.25.1 is the newest tag of the release-0.25 line, go.mod's
# controller-runtime v0.25.2's, on the module proxy (test/kubebuilder fails
# when the minors part).
ENVTEST_VERSION ?= v0.25.1

.PHONY: controller-gen
controller-gen: $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION) ## Build controller-gen into bin/ if necessary.
	@ln -sf controller-gen-$(CONTROLLER_TOOLS_VERSION) $(LOCALBIN)/controller-gen
$(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION): | $(LOCALBIN)
	$(call go-install-tool,$(LOCALBIN)/controller-gen,sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: golangci-lint
golangci-lint: $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION) ## Build golangci-lint into bin/ if necessary.
	@ln -sf golangci-lint-$(GOLANGCI_LINT_VERSION) $(LOCALBIN)/golangci-lint
$(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION): | $(LOCALBIN)
	$(call go-install-tool,$(LOCALBIN)/golangci-lint,github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

## The image builder, built from the hack/ociimage module (which pins
## go-containerregistry); rebuilt only when its source or module files change.
OCIIMAGE ?= $(LOCALBIN)/ociimage
OCIIMAGE_SOURCES := $(wildcard hack/ociimage/*.go) hack/ociimage/go.mod hack/ociimage/go.sum

.PHONY: ociimage
ociimage: $(OCIIMAGE) ## Build the image builder into bin/ if necessary.
$(OCIIMAGE): $(OCIIMAGE_SOURCES) | $(LOCALBIN)
	cd hack/ociimage && go build -o $(abspath $@) .

.PHONY: kustomize
kustomize: $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION) ## Build kustomize into bin/ if necessary.
	@ln -sf kustomize-$(KUSTOMIZE_VERSION) $(LOCALBIN)/kustomize
$(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION): | $(LOCALBIN)
	$(call go-install-tool,$(LOCALBIN)/kustomize,sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: helm
helm: $(LOCALBIN)/helm-$(HELM_VERSION) ## Build helm into bin/ if necessary.
	@ln -sf helm-$(HELM_VERSION) $(LOCALBIN)/helm
$(LOCALBIN)/helm-$(HELM_VERSION): | $(LOCALBIN)
	$(call go-install-tool,$(LOCALBIN)/helm,helm.sh/helm/v4/cmd/helm,$(HELM_VERSION))

.PHONY: ginkgo
ginkgo: $(LOCALBIN)/ginkgo-$(GINKGO_VERSION) ## Build the ginkgo command, which runs the e2e suite in parallel processes, into bin/ if necessary.
	@ln -sf ginkgo-$(GINKGO_VERSION) $(LOCALBIN)/ginkgo
$(LOCALBIN)/ginkgo-$(GINKGO_VERSION): | $(LOCALBIN)
	$(call go-install-tool,$(LOCALBIN)/ginkgo,github.com/onsi/ginkgo/v2/ginkgo,$(GINKGO_VERSION))

.PHONY: kubebuilder
kubebuilder: $(LOCALBIN)/kubebuilder-$(KUBEBUILDER_VERSION) ## Build the kubebuilder CLI into bin/ if necessary (about a minute the first time): test/kubebuilder runs it on a copy of the tree.
	@ln -sf kubebuilder-$(KUBEBUILDER_VERSION) $(LOCALBIN)/kubebuilder
$(LOCALBIN)/kubebuilder-$(KUBEBUILDER_VERSION): | $(LOCALBIN)
	$(call go-install-tool,$(LOCALBIN)/kubebuilder,sigs.k8s.io/kubebuilder/v4,$(KUBEBUILDER_VERSION))

.PHONY: setup-envtest
setup-envtest: $(LOCALBIN)/setup-envtest-$(ENVTEST_VERSION) ## Build controller-runtime's setup-envtest into bin/ if necessary. The Makefile builds its control plane from source instead; `bin/setup-envtest use 1.37 --bin-dir bin -p path` downloads a released kube-apiserver and etcd and prints their directory, for KUBEBUILDER_ASSETS once a kube-controller-manager is added.
	@ln -sf setup-envtest-$(ENVTEST_VERSION) $(LOCALBIN)/setup-envtest
$(LOCALBIN)/setup-envtest-$(ENVTEST_VERSION): | $(LOCALBIN)
	$(call go-install-tool,$(LOCALBIN)/setup-envtest,sigs.k8s.io/controller-runtime/tools/setup-envtest,$(ENVTEST_VERSION))

## Control plane for the envtest suites: kube-apiserver, etcd and
## kube-controller-manager, built from source by the test/tools module (which
## pins k8s.io/kubernetes and etcd) instead of downloaded by setup-envtest.
## Each is rebuilt only when missing or older than test/tools/go.mod or go.sum.
KUBE_APISERVER ?= $(LOCALBIN)/kube-apiserver
ETCD ?= $(LOCALBIN)/etcd
KUBE_CONTROLLER_MANAGER ?= $(LOCALBIN)/kube-controller-manager
TOOLS_MODULE := test/tools/go.mod test/tools/go.sum

# require-envtest-assets stops the test targets, when KUBEBUILDER_ASSETS is set,
# if the directory lacks part of the control plane.
.PHONY: require-envtest-assets
require-envtest-assets:
	@for cmd in kube-apiserver etcd kube-controller-manager; do \
		[ -x "$(abspath $(KUBEBUILDER_ASSETS))/$$cmd" ] || { \
			echo "KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS) has no $$cmd: the tests want kube-apiserver, etcd and kube-controller-manager there; unset it to build all three into bin/"; exit 1; }; \
	done

.PHONY: envtest-assets
envtest-assets: $(KUBE_APISERVER) $(ETCD) $(KUBE_CONTROLLER_MANAGER) ## Build the envtest control plane into bin/ if necessary (the first build takes minutes).

$(KUBE_APISERVER): $(TOOLS_MODULE) | $(LOCALBIN)
	cd test/tools && go build -o $(abspath $@) k8s.io/kubernetes/cmd/kube-apiserver

$(ETCD): $(TOOLS_MODULE) | $(LOCALBIN)
	cd test/tools && go build -o $(abspath $@) go.etcd.io/etcd/server/v3

$(KUBE_CONTROLLER_MANAGER): $(TOOLS_MODULE) | $(LOCALBIN)
	cd test/tools && go build -o $(abspath $@) k8s.io/kubernetes/cmd/kube-controller-manager

## kubemark, whose --morph=kubelet runs the real kubelet as a hollow node (a
## fake container runtime in its own process), for the specs and tools that
## judge a real kubelet (test/harness/kubelet.go, docs/kubelet.md). Built from
## the same test/tools pin as the control plane, and rebuilt when it changes.
KUBEMARK ?= $(LOCALBIN)/kubemark

.PHONY: kubemark
kubemark: $(KUBEMARK) ## Build kubemark (k8s.io/kubernetes/cmd/kubemark, test/tools' pin), whose --morph=kubelet is a real kubelet on a fake runtime, into bin/ if necessary.

$(KUBEMARK): $(TOOLS_MODULE) | $(LOCALBIN)
	cd test/tools && go build -o $(abspath $@) k8s.io/kubernetes/cmd/kubemark

## The same control plane at older Kubernetes minors, for make test-compat:
## test/tools/k8s-<minor> pins that minor's k8s.io/kubernetes and the etcd it
## uses, and each command is built into bin/k8s-<minor>/.
K8S_MINORS ?= 1.35 1.36
MINOR_ASSETS := $(foreach m,$(K8S_MINORS),$(addprefix $(LOCALBIN)/k8s-$(m)/,kube-apiserver etcd kube-controller-manager))

.PHONY: envtest-assets-minors
envtest-assets-minors: $(MINOR_ASSETS) ## Build kube-apiserver, etcd and kube-controller-manager of each of K8S_MINORS (1.35: v1.35.4 and etcd v3.6.5; 1.36: v1.36.3 and etcd v3.6.8) into bin/k8s-<minor>/ if necessary (about 4 minutes a minor on two cores).

$(LOCALBIN)/k8s-%/kube-apiserver: test/tools/k8s-%/go.mod test/tools/k8s-%/go.sum
	@mkdir -p $(@D)
	cd test/tools/k8s-$* && go build -o $(abspath $@) k8s.io/kubernetes/cmd/kube-apiserver

$(LOCALBIN)/k8s-%/etcd: test/tools/k8s-%/go.mod test/tools/k8s-%/go.sum
	@mkdir -p $(@D)
	cd test/tools/k8s-$* && go build -o $(abspath $@) go.etcd.io/etcd/server/v3

$(LOCALBIN)/k8s-%/kube-controller-manager: test/tools/k8s-%/go.mod test/tools/k8s-%/go.sum
	@mkdir -p $(@D)
	cd test/tools/k8s-$* && go build -o $(abspath $@) k8s.io/kubernetes/cmd/kube-controller-manager

# go-install-tool builds a pinned Go command into $(LOCALBIN) as <name>-<version>.
# The unversioned <name> is a symlink to it, refreshed by the tool's phony target,
# so that changing a version builds the new one instead of reusing the old.
# $1 - target path of the binary, without version
# $2 - package to install
# $3 - version of the package
define go-install-tool
@{ \
set -e; \
package=$(2)@$(3) ;\
echo "Building $${package}" ;\
rm -f "$(1)" ;\
GOBIN="$(LOCALBIN)" go install "$${package}" ;\
mv "$(1)" "$(1)-$(3)" ;\
}
endef
