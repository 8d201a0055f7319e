#!/usr/bin/env bash
# cluster.sh: a real two-node Kubernetes cluster on this machine, for the
# tests of runtime/kube (make test-cluster, make test-cluster-down).
#
#   cluster.sh build            build the binaries (testdata/k8s/cluster, cached)
#   cluster.sh up               build if needed, start the cluster, print its kubeconfig
#   cluster.sh down             stop it; leave no process, netns, mount, cgroup or state
#   cluster.sh status           say what runs
#   cluster.sh env              print CCRUN_K8S_KUBECONFIG=... and CCRUN_K8S_REGISTRY=... for a running cluster
#   cluster.sh load IMAGE...    import Docker images into every node (docker save | ctr import)
#   cluster.sh stop NAME        stop one component: apiserver, kubelet-1, kubelet-2, ...
#   cluster.sh start NAME       start it again
#
# Layout. Everything lives in network namespaces this script creates:
# ccrun-k8s holds a bridge (10.224.0.1/24) with etcd (its loopback), the API
# server (bound to 10.224.0.1), the controller manager and the scheduler;
# ccrun-k8s-N holds node N's containerd and kubelet (node IP 10.224.0.1N on a
# veth to that bridge) and its pods (CNI bridge + host-local, 10.225.N.0/24,
# no gateway, no masquerade, no routes: a pod reaches nothing outside its
# node). The host reaches the API server only through netfwd, on its own
# loopback (127.0.0.1:$CCRUN_K8S_PORT, default 16443). Nothing is routed
# out of these namespaces and no iptables rule is added outside them.
#
# Registry. Each node's containerd may pull, over plain HTTP, from one
# registry: 127.0.0.1:$CCRUN_K8S_REGISTRY_PORT (default 16500), which a
# test serves on the host's loopback (runtime/kube's registry tests). A
# netfwd -reverse per node listens on that address on the node's own
# loopback and dials the host's; containerd's hosts.toml for that host
# (config_path, as containerd documents it) says it speaks HTTP. Nothing
# else is reachable from a node: an image from any other registry fails
# to pull.
#
# cgroups. The nodes run under the cgroup v1 hierarchies (the layout of
# this machine: /sys/fs/cgroup/<controller>, with failCgroupV1: false);
# up refuses, saying so, a machine that is cgroup v2 only.
#
# Each node has its own cgroupRoot (/ccrun-k8s/nN, created under every
# controller) and the daemons run in /ccrun-k8s/daemons of the pids
# controller, so down can kill
# every process the cluster started (pods and containerd shims included).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=${CCRUN_K8S_DIR:-/var/tmp/ccrun-k8s}
BIN=$DIR/bin
ST=$DIR/state
RUN=/run/ccrun-k8s
PORT=${CCRUN_K8S_PORT:-16443}
RPORT=${CCRUN_K8S_REGISTRY_PORT:-16500}
REGISTRY=127.0.0.1:$RPORT
NODES=${CCRUN_K8S_NODES:-2}
VERSION=v1.37.2
CP=ccrun-k8s
CPIP=10.224.0.1
CG=ccrun-k8s
PAUSE=ccrun.local/pause:1
KUBECTL="$BIN/kubectl --kubeconfig $ST/admin.kubeconfig"
TRACK=/sys/fs/cgroup/pids/$CG # where every process of the cluster is found
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

log() { printf 'cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

nodeip() { echo "10.224.0.1$1"; }
nodename() { echo "ccrun-node$1"; }
netns() { echo "/run/netns/ccrun-k8s-$1"; }

# ---- build -------------------------------------------------------------

# stamp names what the binaries are built from (the module and its
# sources), so that a fresh clone finds a build it can use.
stamp() {
	(cd "$HERE/cluster" && cat go.mod go.sum ./*/*.go | sha256sum | cut -d' ' -f1)
}

built() {
	local c
	for c in "${COMPONENTS[@]}" netfwd pause; do
		[[ -x $BIN/$c ]] || return 1
	done
	[[ $(cat "$BIN/.stamp" 2>/dev/null) == "$(stamp)" ]]
}

build() {
	mkdir -p "$BIN"
	if built; then return 0; fi
	log "building kubernetes $VERSION and etcd into $BIN (the first build takes ~25 min on 2 cores; later ones use the Go build cache)"
	local t0=$SECONDS
	(cd "$HERE/cluster" && nice -n 10 go build -o "$BIN/" \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$VERSION" \
		./etcd ./netfwd k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl)
	(cd "$HERE/cluster" && CGO_ENABLED=0 go build -ldflags "-s -w" -o "$BIN/pause" ./pause)
	stamp >"$BIN/.stamp"
	log "built in $((SECONDS - t0)) s"
}

# ---- certificates -------------------------------------------------------

cert() { # name subject [sans]
	local name=$1 subj=$2 sans=${3:-}
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$ST/pki/$name.key" -out "$ST/pki/$name.csr" -subj "$subj" 2>/dev/null
	local ext="$ST/pki/$name.ext"
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=serverAuth,clientAuth"
		[[ -n $sans ]] && echo "subjectAltName=$sans"
	} >"$ext"
	openssl x509 -req -in "$ST/pki/$name.csr" -CA "$ST/pki/ca.crt" -CAkey "$ST/pki/ca.key" \
		-CAcreateserial -days 30 -extfile "$ext" -out "$ST/pki/$name.crt" 2>/dev/null
}

pki() {
	mkdir -p "$ST/pki"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
		-keyout "$ST/pki/ca.key" -out "$ST/pki/ca.crt" -subj "/CN=ccrun-k8s-ca" 2>/dev/null
	cert apiserver "/CN=kube-apiserver" \
		"IP:$CPIP,IP:127.0.0.1,IP:10.226.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:localhost"
	cert admin "/O=system:masters/CN=ccrun-admin"
	cert apiserver-kubelet "/O=system:masters/CN=kube-apiserver-kubelet-client"
	cert controller-manager "/CN=system:kube-controller-manager"
	cert scheduler "/CN=system:kube-scheduler"
	local i
	for i in $(seq 1 "$NODES"); do
		cert "node$i" "/O=system:nodes/CN=system:node:$(nodename "$i")" "IP:$(nodeip "$i")"
	done
	openssl ecparam -name prime256v1 -genkey -noout -out "$ST/pki/sa.key" 2>/dev/null
	openssl ec -in "$ST/pki/sa.key" -pubout -out "$ST/pki/sa.pub" 2>/dev/null
}

kubeconfig() { # file server name
	local file=$1 server=$2 name=$3
	cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ccrun-k8s
  cluster:
    server: $server
    certificate-authority: $ST/pki/ca.crt
users:
- name: $name
  user:
    client-certificate: $ST/pki/$name.crt
    client-key: $ST/pki/$name.key
contexts:
- name: ccrun-k8s
  context: {cluster: ccrun-k8s, user: $name}
current-context: ccrun-k8s
EOF
}

# ---- network namespaces and cgroups ------------------------------------

network() {
	ip netns add $CP
	ip -n $CP link set lo up
	ip -n $CP link add br0 type bridge
	ip -n $CP addr add $CPIP/24 dev br0
	ip -n $CP link set br0 up
	local i
	for i in $(seq 1 "$NODES"); do
		ip netns add "ccrun-k8s-$i"
		ip -n "ccrun-k8s-$i" link set lo up
		ip -n $CP link add "vn$i" type veth peer name eth0 netns "ccrun-k8s-$i"
		ip -n $CP link set "vn$i" master br0 up
		ip -n "ccrun-k8s-$i" addr add "$(nodeip "$i")/24" dev eth0
		ip -n "ccrun-k8s-$i" link set eth0 up
	done
}

hierarchies() {
	local d
	for d in /sys/fs/cgroup/*/; do
		[[ -e $d/cgroup.procs ]] && echo "${d%/}"
	done
	return 0
}

cgroups() {
	local h sub
	for h in $(hierarchies); do
		for sub in daemons $(seq -f 'n%g' 1 "$NODES"); do
			mkdir -p "$h/$CG/$sub"
			if [[ -e $h/cpuset.cpus ]]; then
				cat "$h/cpuset.cpus" >"$h/$CG/cpuset.cpus"
				cat "$h/cpuset.mems" >"$h/$CG/cpuset.mems"
				cat "$h/cpuset.cpus" >"$h/$CG/$sub/cpuset.cpus"
				cat "$h/cpuset.mems" >"$h/$CG/$sub/cpuset.mems"
			fi
		done
	done
}

# ---- processes ---------------------------------------------------------

# daemon NAME NETNS CMD...: start CMD in NETNS, in the daemons cgroup, its
# output to $ST/logs/NAME.log, its pid in $ST/pids/NAME.
daemon() {
	local name=$1 ns=$2
	shift 2
	mkdir -p "$ST/logs" "$ST/pids"
	# The subshell joins the daemons cgroup of the pids hierarchy (only that one:
# their memory stays accounted where this script's is), then execs:
	# the daemon and all it starts (containerd's shims) stay there.
	(
		echo $BASHPID >"$TRACK/daemons/cgroup.procs"
		# No descriptor of the caller's but the log: a test that restarts
		# a daemon must not leave it holding the test's pipes or locks.
		local fd
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
		done
		exec setsid nsenter --net="$ns" -- "$@" </dev/null >>"$ST/logs/$name.log" 2>&1
	) &
	echo $! >"$ST/pids/$name"
	printf '%s\0' "$@" >"$ST/pids/$name.cmd"
}

# pidsof NAME: every process of the cluster's daemons that runs NAME's
# command line (daemon wrote it), whatever its pid file says: a pid file
# left by a process that died, or a second start, must not hide one.
pidsof() {
	local cmd=$ST/pids/$1.cmd pid
	[[ -f $cmd && -f $TRACK/daemons/cgroup.procs ]] || return 0
	while read -r pid; do
		# Not cmp -s: it takes files of different sizes for different
		# unread, and /proc/PID/cmdline says it has none.
		cmp "/proc/$pid/cmdline" "$cmd" >/dev/null 2>&1 && echo "$pid"
	done <"$TRACK/daemons/cgroup.procs"
	return 0
}

stopproc() { # name [signal]: the process of its pid file and every other running its command
	local f=$ST/pids/$1 pid pids n
	pids=$( { [[ -f $f ]] && cat "$f"; pidsof "$1"; } | sort -u)
	for pid in $pids; do
		kill -0 "$pid" 2>/dev/null || continue
		kill -"${2:-TERM}" "$pid" 2>/dev/null || true
		for n in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	done
	rm -f "$f"
}

# running NAME: a process runs NAME's command.
running() { [[ -n $(pidsof "$1") ]]; }

wait_for() { # what seconds command...
	local what=$1 secs=$2 i
	shift 2
	for i in $(seq 1 $((secs * 5))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	diagnose
	die "$what did not come up within ${secs}s (logs in $ST/logs, their ends above)"
}

# wait_nodes SECS: every node Ready within SECS. A kubelet that exited
# (a start-up error: it does not retry) is started again, once, with the
# end of its log said, so that one bad start does not fail the cluster.
wait_nodes() {
	local secs=$1 i end=$((SECONDS + $1)) restarted=()
	while ((SECONDS < end)); do
		if [[ $($KUBECTL get nodes --no-headers 2>/dev/null | grep -cw Ready) == "$NODES" ]]; then return 0; fi
		for i in $(seq 1 "$NODES"); do
			running "kubelet-$i" && continue
			if [[ " ${restarted[*]} " == *" $i "* ]]; then
				diagnose
				die "the kubelet of node $i exited twice (logs in $ST/logs, their ends above)"
			fi
			log "the kubelet of node $i exited; the end of its log, then starting it again:"
			tail -n 15 "$ST/logs/kubelet-$i.log" | cut -c1-400 | sed 's/^/  /' >&2
			restarted+=("$i")
			start_kubelet "$i"
		done
		sleep 0.5
	done
	diagnose
	die "$NODES ready nodes did not come up within ${secs}s (logs in $ST/logs, their ends above)"
}

# diagnose prints, for a wait that ran out, what the cluster says of
# itself and the end of each daemon's log: CI keeps only the output.
diagnose() {
	local f
	log "what the cluster says of itself:"
	$KUBECTL get nodes -o wide 2>&1 | sed 's/^/  /' >&2 || true
	$KUBECTL get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{range .status.conditions[*]}{"  "}{.type}={.status} {.reason}: {.message}{"\n"}{end}{end}' 2>&1 | sed 's/^/  /' >&2 || true
	for f in "$ST"/logs/*.log; do
		[[ -f $f ]] || continue
		log "the end of $(basename "$f"):"
		tail -n 15 "$f" | cut -c1-400 | sed 's/^/  /' >&2
	done
}

start_etcd() {
	daemon etcd /run/netns/$CP "$BIN/etcd" --name default --data-dir "$ST/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster default=http://127.0.0.1:2380 --unsafe-no-fsync --log-level warn
}

start_apiserver() {
	daemon apiserver /run/netns/$CP "$BIN/kube-apiserver" \
		--etcd-servers=http://127.0.0.1:2379 \
		--bind-address=$CPIP --advertise-address=$CPIP --secure-port=6443 \
		--tls-cert-file="$ST/pki/apiserver.crt" --tls-private-key-file="$ST/pki/apiserver.key" \
		--client-ca-file="$ST/pki/ca.crt" \
		--service-account-issuer=https://kubernetes.default.svc \
		--service-account-key-file="$ST/pki/sa.pub" --service-account-signing-key-file="$ST/pki/sa.key" \
		--service-cluster-ip-range=10.226.0.0/24 \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--anonymous-auth=false --allow-privileged=false --profiling=false \
		--kubelet-client-certificate="$ST/pki/apiserver-kubelet.crt" --kubelet-client-key="$ST/pki/apiserver-kubelet.key" \
		--kubelet-certificate-authority="$ST/pki/ca.crt" \
		--kubelet-preferred-address-types=InternalIP
}

start_controller_manager() {
	daemon controller-manager /run/netns/$CP "$BIN/kube-controller-manager" \
		--kubeconfig="$ST/controller-manager.kubeconfig" \
		--authentication-kubeconfig="$ST/controller-manager.kubeconfig" \
		--authorization-kubeconfig="$ST/controller-manager.kubeconfig" \
		--service-account-private-key-file="$ST/pki/sa.key" --root-ca-file="$ST/pki/ca.crt" \
		--use-service-account-credentials=true --leader-elect=false --bind-address=127.0.0.1 \
		--terminated-pod-gc-threshold=100
}

start_scheduler() {
	daemon scheduler /run/netns/$CP "$BIN/kube-scheduler" \
		--kubeconfig="$ST/scheduler.kubeconfig" \
		--authentication-kubeconfig="$ST/scheduler.kubeconfig" \
		--authorization-kubeconfig="$ST/scheduler.kubeconfig" \
		--leader-elect=false --bind-address=127.0.0.1
}

node_config() { # i
	local i=$1 n=$ST/n$1
	mkdir -p "$n/cni" "$n/ipam" "$n/kubelet" "$n/podlogs" "$RUN/n$i"
	cat >"$n/containerd.toml" <<EOF
version = 2
root = "$n/containerd"
state = "$RUN/n$i/containerd"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$RUN/n$i/containerd.sock"
[ttrpc]
  address = "$RUN/n$i/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$n/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$n/cni"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
EOF
	mkdir -p "$n/certs.d/$REGISTRY"
	cat >"$n/certs.d/$REGISTRY/hosts.toml" <<EOF
server = "http://$REGISTRY"

[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
	cat >"$n/cni/10-ccrun.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "ccrun",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": false,
    "ipMasq": false,
    "hairpinMode": false,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.225.$i.0/24"}]], "dataDir": "$n/ipam"}
  }]
}
EOF
	: >"$ST/resolv.conf"
	cat >"$n/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $(nodeip "$i")
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $ST/pki/node$i.crt
tlsPrivateKeyFile: $ST/pki/node$i.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $ST/pki/ca.crt}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$RUN/n$i/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /$CG/n$i
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
resolvConf: $ST/resolv.conf
podLogsDir: $n/podlogs
nodeStatusUpdateFrequency: 4s
nodeStatusReportFrequency: 1m
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
serializeImagePulls: false
maxPods: 110
localStorageCapacityIsolation: true
podPidsLimit: 1024
EOF
}

start_containerd() { # i
	daemon "containerd-$1" "$(netns "$1")" containerd --config "$ST/n$1/containerd.toml"
	wait_for "containerd of node $1" 30 ctr -a "$RUN/n$1/containerd.sock" version
}

# start_regfwd: node i's loopback $REGISTRY forwarded to the host's.
start_regfwd() { # i
	local name=regfwd-$1
	mkdir -p "$ST/logs" "$ST/pids"
	(
		echo $BASHPID >"$TRACK/daemons/cgroup.procs"
		exec setsid "$BIN/netfwd" -reverse -listen "$REGISTRY" -netns "$(netns "$1")" -to "$REGISTRY" </dev/null >>"$ST/logs/$name.log" 2>&1
	) &
	echo $! >"$ST/pids/$name"
}

start_kubelet() { # i
	daemon "kubelet-$1" "$(netns "$1")" "$BIN/kubelet" --config="$ST/n$1/kubelet.yaml" \
		--kubeconfig="$ST/node$1.kubeconfig" --root-dir="$ST/n$1/kubelet" \
		--hostname-override="$(nodename "$1")" --node-ip="$(nodeip "$1")" --cert-dir="$ST/n$1/kubelet/pki"
}

# pause_image builds the sandbox image: the static pause program, FROM scratch.
pause_image() {
	local ctx
	ctx=$(mktemp -d)
	cp "$BIN/pause" "$ctx/pause"
	printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"$ctx/Dockerfile"
	docker build -q -t $PAUSE "$ctx" >/dev/null
	rm -rf "$ctx"
}

# normref spells a reference as containerd names it (docker.io/library/
# for a short name, :latest for none).
normref() {
	local r=$1 name tag first
	name=${r%:*}
	tag=${r##*:}
	if [[ $name == "$r" || $tag == */* ]]; then name=$r tag=latest; fi
	first=${name%%/*}
	if [[ $name != */* ]]; then
		name=docker.io/library/$name
	elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then
		name=docker.io/$name
	fi
	echo "$name:$tag"
}

# load imports Docker images into every node, each also named by its
# digest (REPO@sha256:...), so that a pod can name it digest-pinned and
# the kubelet reports both names in Node.status.images.
load() { # image...
	local i img ref digest sock
	for i in $(seq 1 "$NODES"); do
		sock=$RUN/n$i/containerd.sock
		docker save "$@" | ctr -a "$sock" -n k8s.io images import - >/dev/null
		for img in "$@"; do
			ref=$(normref "$img")
			digest=$(ctr -a "$sock" -n k8s.io images ls | awk -v r="$ref" '$1 == r {print $3}')
			[[ -n $digest ]] || die "node $i: $ref not imported"
			ctr -a "$sock" -n k8s.io images tag --force "$ref" "${ref%:*}@$digest" >/dev/null
		done
	done
}

# cgroup_layout refuses a machine whose cgroups the nodes cannot run
# under, saying what it found: they need the cgroup v1 hierarchies (a pids
# one above all, where every process of the cluster is tracked). A machine
# that is cgroup v2 only (/sys/fs/cgroup a cgroup2 file system) is not
# supported yet; on one that is not (v1, or hybrid), the kubelets run with
# failCgroupV1: false, which Kubernetes deprecates.
cgroup_layout() {
	local fs
	fs=$(stat -fc %T /sys/fs/cgroup 2>/dev/null || echo none)
	if [[ $fs == cgroup2fs ]]; then
		die "this machine is cgroup v2 only (/sys/fs/cgroup is a cgroup2 file system): the test cluster runs its nodes under the cgroup v1 hierarchies (/sys/fs/cgroup/pids, cgroupRoot under every controller) and does not support cgroup v2 yet; run it on a machine with cgroup v1 (or hybrid) hierarchies"
	fi
	[[ -f /sys/fs/cgroup/pids/cgroup.procs ]] || die "no cgroup v1 pids hierarchy at /sys/fs/cgroup/pids (/sys/fs/cgroup is $fs): the test cluster tracks its processes there"
	log "cgroups: this machine is not cgroup v2 only ($(hierarchies | wc -l) cgroup v1 hierarchies under /sys/fs/cgroup): the kubelets run with failCgroupV1: false"
}

up() {
	[[ $(id -u) == 0 ]] || die "needs root (network namespaces, cgroups, containerd)"
	cgroup_layout
	# What the nodes need from the host (.ci/run installs them): without
	# them the cluster would come up and every pod stay ContainerCreating.
	local p
	for p in /usr/lib/cni/bridge:containernetworking-plugins /usr/lib/cni/host-local:containernetworking-plugins \
		"$(command -v containerd || echo /nonexistent/containerd):containerd" "$(command -v openssl || echo /nonexistent/openssl):openssl" \
		"$(command -v ip || echo /nonexistent/ip):iproute2"; do
		[[ -x ${p%%:*} ]] || die "${p%%:*} is missing: apt-get install ${p##*:}"
	done
	if [[ -f $ST/up ]]; then
		if $KUBECTL get --raw /readyz >/dev/null 2>&1; then
			env_line
			return 0
		fi
		log "a cluster was left half up: taking it down first"
		down
	fi
	build
	local t0=$SECONDS i
	mkdir -p "$ST" "$RUN"
	pki
	kubeconfig "$ST/admin.kubeconfig" "https://127.0.0.1:$PORT" admin
	kubeconfig "$ST/controller-manager.kubeconfig" "https://$CPIP:6443" controller-manager
	kubeconfig "$ST/scheduler.kubeconfig" "https://$CPIP:6443" scheduler
	for i in $(seq 1 "$NODES"); do kubeconfig "$ST/node$i.kubeconfig" "https://$CPIP:6443" "node$i"; done
	touch "$ST/up"
	network
	cgroups
	# The host's side: netfwd on its loopback, dialling into ccrun-k8s.
	mkdir -p "$ST/logs" "$ST/pids"
	(
		echo $BASHPID >"$TRACK/daemons/cgroup.procs"
		exec setsid "$BIN/netfwd" -listen "127.0.0.1:$PORT" -netns /run/netns/$CP -to "$CPIP:6443" </dev/null >>"$ST/logs/netfwd.log" 2>&1
	) &
	echo $! >"$ST/pids/netfwd"
	start_etcd
	pause_image
	for i in $(seq 1 "$NODES"); do
		node_config "$i"
		start_regfwd "$i"
		start_containerd "$i"
	done
	start_apiserver
	wait_for "the API server" 60 $KUBECTL get --raw /readyz
	start_controller_manager
	start_scheduler
	for i in $(seq 1 "$NODES"); do start_kubelet "$i"; done
	local images=($PAUSE)
	if docker image inspect ccrun-test:busybox >/dev/null 2>&1; then images+=(ccrun-test:busybox); fi
	load "${images[@]}"
	wait_nodes 240
	# The nodes report their images in their status within seconds: the
	# tests resolve tags through it.
	wait_for "the nodes to report their images" 60 bash -c "[[ \$($KUBECTL get nodes -o jsonpath='{.items[*].status.images[*].names}' | grep -o '${images[-1]//./\\.}' | wc -l) -ge $NODES ]]"
	wait_for "the default service account" 60 $KUBECTL -n default get serviceaccount default
	log "up in $((SECONDS - t0)) s: $NODES nodes"
	env_line
}

env_line() {
	echo "CCRUN_K8S_KUBECONFIG=$ST/admin.kubeconfig CCRUN_K8S_REGISTRY=$REGISTRY"
}

# ---- down --------------------------------------------------------------

procs() { # every pid in the cluster's cgroups
	[[ -d $TRACK ]] || return 0
	find "$TRACK" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u
}

down() {
	[[ $(id -u) == 0 ]] || die "needs root"
	local i pid n
	# The API server before etcd; kubelets before their containerd.
	stopproc scheduler
	stopproc controller-manager
	stopproc apiserver
	stopproc etcd
	for i in $(seq 1 "$NODES"); do stopproc "kubelet-$i"; done
	for i in $(seq 1 "$NODES"); do stopproc "containerd-$i"; done
	for i in $(seq 1 "$NODES"); do stopproc "regfwd-$i"; done
	stopproc netfwd
	# Whatever is left in the cluster's cgroups: shims, pods.
	for n in $(seq 1 50); do
		pid=$(procs)
		[[ -z $pid ]] && break
		# shellcheck disable=SC2086
		kill -KILL $pid 2>/dev/null || true
		sleep 0.1
	done
	# Mounts: rootfs overlays, emptyDirs, projected volumes, netns files.
	local m
	for n in 1 2 3; do
		while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done < <(awk '{print $5}' /proc/self/mountinfo | grep -E "^($ST|$RUN|/run/netns/ccrun-k8s)" | sort -r)
	done
	for i in $(seq 1 "$NODES"); do ip netns del "ccrun-k8s-$i" 2>/dev/null || true; done
	ip netns del $CP 2>/dev/null || true
	local h d
	for h in $(hierarchies); do
		if [[ -d $h/$CG ]]; then
			find "$h/$CG" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		fi
	done
	rm -rf "$ST" "$RUN"
	status_left
}

# status_left fails, naming it, when anything of the cluster is left.
status_left() {
	local left=()
	[[ -n $(procs) ]] && left+=("processes: $(procs | tr '\n' ' ')")
	local ns
	ns=$(ip netns list 2>/dev/null | grep -E '^ccrun-k8s' || true)
	[[ -n $ns ]] && left+=("network namespaces: $ns")
	local mnt
	mnt=$(awk '{print $5}' /proc/self/mountinfo | grep -E "^($DIR/state|$RUN|/run/netns/ccrun-k8s)" || true)
	[[ -n $mnt ]] && left+=("mounts: $mnt")
	local h
	for h in $(hierarchies); do [[ -d $h/$CG ]] && left+=("cgroup: $h/$CG"); done
	local rules
	rules=$({ iptables-save; iptables-legacy-save; } 2>/dev/null | grep -E '10\.22[456]\.|KUBE-|cni0|ccrun-k8s' || true)
	[[ -n $rules ]] && left+=("host iptables rules: $rules")
	if ((${#left[@]})); then
		printf 'cluster: left behind: %s\n' "${left[@]}" >&2
		return 1
	fi
	log "down: nothing left"
}

status() {
	local f
	for f in "$ST"/pids/*; do
		[[ -f $f && $f != *.cmd ]] || continue
		if kill -0 "$(cat "$f")" 2>/dev/null; then echo "$(basename "$f"): running"; else echo "$(basename "$f"): stopped"; fi
	done
	[[ -f $ST/up ]] && $KUBECTL get nodes -o wide 2>/dev/null || true
}

component() { # start|stop name
	case $2 in
	apiserver | kubelet-[0-9]*) ;;
	*) die "unknown component $2: want apiserver or kubelet-N" ;;
	esac
	if [[ $1 == start ]] && running "$2"; then
		log "$2 runs already (pid $(pidsof "$2" | xargs)): not started again"
		return 0
	fi
	case $2 in
	apiserver) [[ $1 == stop ]] && stopproc apiserver || { start_apiserver; wait_for "the API server" 60 $KUBECTL get --raw /readyz; } ;;
	kubelet-[0-9]*) [[ $1 == stop ]] && stopproc "$2" KILL || start_kubelet "${2#kubelet-}" ;;
	esac
}

case ${1:-} in
build) build ;;
up) up ;;
down) down ;;
status) status ;;
env) [[ -f $ST/up ]] && env_line || die "no cluster: cluster.sh up" ;;
load) shift; load "$@" ;;
stop | start) component "$1" "${2:-}" ;;
*) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
