# runtime/kube: a real two-node Kubernetes cluster on this machine for its
# tests (testdata/k8s/cluster.sh). Included by the root Makefile.
#
#   make test-cluster        build the binaries if needed (~25 min the first
#                            time on 2 cores), start the cluster, print
#                            CCRUN_K8S_KUBECONFIG=... for the tests
#   make test-cluster-down   stop it: no process, network namespace, mount,
#                            cgroup or iptables rule left
#   make test-kube           the Kubernetes tests, against that cluster
#                            (CCRUN_REQUIRE_K8S=1: a missing cluster fails)

K8S_CLUSTER ?= testdata/k8s/cluster.sh
K8S_ENV      = $$($(K8S_CLUSTER) env)

.PHONY: test-cluster-build
test-cluster-build: ## build the test cluster's binaries (kubernetes v1.37.2, etcd), cached
	$(K8S_CLUSTER) build

.PHONY: test-cluster
test-cluster: ## start a 2-node Kubernetes cluster on this machine (builds it first if needed)
	$(K8S_CLUSTER) up

.PHONY: test-cluster-down
test-cluster-down: ## stop the test cluster and remove everything it made
	$(K8S_CLUSTER) down

.PHONY: test-kube
test-kube: ## the Kubernetes engine's tests against the test cluster (CCRUN_REQUIRE_K8S=1)
	env $(K8S_ENV) CCRUN_REQUIRE_K8S=1 CCRUN_K8S_CLUSTER=$(CURDIR)/$(K8S_CLUSTER) $(GO) test -race -count=1 -timeout 30m ./runtime/kube/
	env $(K8S_ENV) CCRUN_REQUIRE_K8S=1 CCRUN_K8S_CLUSTER=$(CURDIR)/$(K8S_CLUSTER) $(GO) test -count=1 -timeout 20m -run 'Kube|ExecutorsAgree' . ./cmd/ccrun/internal/cli/

.PHONY: bench-kube
bench-kube: ## cold and warm-pool calls on the test cluster against kubectl run
	env $(K8S_ENV) CCRUN_REQUIRE_K8S=1 CCRUN_K8S_CLUSTER=$(CURDIR)/$(K8S_CLUSTER) $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./runtime/kube/

.PHONY: bench-kube-capacity
bench-kube-capacity: ## the warm pool's throughput on the test cluster, 1 to 16 callers at once
	env $(K8S_ENV) CCRUN_REQUIRE_K8S=1 CCRUN_K8S_CLUSTER=$(CURDIR)/$(K8S_CLUSTER) CCRUN_BENCH_CALLERS=$${CCRUN_BENCH_CALLERS:-1,2,4,8,16} $(GO) test -run '^$$' -bench Throughput -benchtime 1x -timeout 30m ./runtime/kube/
