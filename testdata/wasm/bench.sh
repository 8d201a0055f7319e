#!/bin/sh
# bench.sh [CCRUN] [N] [M] — the CLI side by side with `wazero run`, as new
# processes, warm disk caches, every pair in the same loop (interleaved, so
# that the load of the machine weighs on both alike):
#
#   hello (N runs each, default 50):
#     ccrun exec --wasm hello.wasm                 (the default: the warm server)
#     CCRUN_WASM_SERVER=0 ccrun exec --wasm ...    (one-shot, in ccrun's process)
#     wazero run -cachedir D hello.wasm
#   CPU-bound guest (M runs each, default 3; probe spin, ~1-2 s):
#     ccrun exec --timeout 120s --wasm probe.wasm -- spin R   (default, and =0)
#     wazero run -cachedir D probe.wasm spin R                (no timeout)
#
# It prints each median, its ratio to wazero run's, and the load average
# before and after. CCRUN defaults to bin/ccrun; SPIN sets R (default
# 300000). Installs the peer with `go install` when it is not on PATH or in
# $(go env GOPATH)/bin. The warm server is one of its own (XDG_RUNTIME_DIR in
# a temporary directory, the project a temporary directory too), stopped
# with SIGTERM at the end.
set -eu
CCRUN=${1:-bin/ccrun}
N=${2:-50}
M=${3:-3}
SPIN=${SPIN:-300000}
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
case $CCRUN in /*) ;; *) CCRUN="$PWD/$CCRUN" ;; esac
work=$(mktemp -d)
mkdir -m 700 "$work/run"
stop_servers() {
	for lock in "$work"/run/ccrun/*.lock; do
		[ -f "$lock" ] || continue
		pid=$(cat "$lock" 2>/dev/null || true)
		[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap stop_servers EXIT

peer=$(command -v wazero || true)
if [ -z "$peer" ]; then
	peer="$($GO env GOPATH)/bin/wazero"
	if [ ! -x "$peer" ] || ! "$peer" version 2>/dev/null | grep -q 'v1.12.0'; then
		echo "installing wazero v1.12.0" >&2
		$GO install github.com/tetratelabs/wazero/cmd/wazero@v1.12.0
	fi
fi
[ -x "$CCRUN" ] || { echo "bench.sh: $CCRUN not found; run make build" >&2; exit 1; }

for g in hello probe; do
	(cd "$here/$g" && GOOS=wasip1 GOARCH=wasm $GO build -o "$work/$g.wasm" .)
done
cd "$work" # the project of the ccrun runs: no ccrun.json, no git

export XDG_RUNTIME_DIR="$work/run"
served() { "$CCRUN" exec --approve once "$@"; }
inproc() { CCRUN_WASM_SERVER=0 "$CCRUN" exec --approve once "$@"; }
hello_served() { served --wasm hello.wasm >/dev/null; }
hello_inproc() { inproc --wasm hello.wasm >/dev/null; }
hello_wazero() { "$peer" run -cachedir "$work/peer-cache" hello.wasm >/dev/null; }
spin_served() { served --timeout 120s --wasm probe.wasm -- spin "$SPIN" >/dev/null; }
spin_inproc() { inproc --timeout 120s --wasm probe.wasm -- spin "$SPIN" >/dev/null; }
spin_wazero() { "$peer" run -cachedir "$work/peer-cache" probe.wasm spin "$SPIN" >/dev/null; }

# Warm the disk caches and the server (the first run starts it).
for f in hello_inproc hello_inproc hello_wazero hello_wazero hello_served hello_served hello_served; do $f; done
ls "$work"/run/ccrun/*.sock >/dev/null 2>&1 || { echo "bench.sh: the wasm server did not start" >&2; exit 1; }
spin_inproc
spin_wazero
SPIN=1 spin_served

# pairs RUNS F...: RUNS rounds, each timing every function F once in turn
# (microseconds into $work/F.times).
pairs() {
	runs=$1
	shift
	for f in "$@"; do : >"$work/$f.times"; done
	i=0
	while [ $i -lt "$runs" ]; do
		for f in "$@"; do
			t0=$(date +%s%N)
			"$f"
			t1=$(date +%s%N)
			echo $(((t1 - t0) / 1000)) >>"$work/$f.times"
		done
		i=$((i + 1))
	done
}

# median F: the median of F's times, in ms.
median() {
	sort -n "$work/$1.times" | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]/1000}'
}

# row LABEL F PEER GOAL: one line: the median of F, PEER's, the ratio.
row() {
	awk -v l="$1" -v a="$(median "$2")" -v b="$(median "$3")" -v g="$4" \
		'BEGIN {printf "%-52s p50 %9.2f ms  vs wazero run %9.2f ms  ratio %.2f  (goal %s)\n", l, a, b, a/b, g}'
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
pairs "$N" hello_served hello_inproc hello_wazero
pairs "$M" spin_served spin_inproc spin_wazero
load1=$(cut -d' ' -f1-3 /proc/loadavg)

echo "$CCRUN vs $peer; hello $N runs, spin $SPIN $M runs each, interleaved"
row "ccrun exec --wasm hello.wasm (default: warm server)" hello_served hello_wazero "<= 0.30"
row "CCRUN_WASM_SERVER=0 ccrun exec --wasm hello.wasm" hello_inproc hello_wazero "-"
row "ccrun exec --timeout 120s probe spin (default)" spin_served spin_wazero "<= 1.10"
row "CCRUN_WASM_SERVER=0 ccrun exec --timeout 120s spin" spin_inproc spin_wazero "<= 1.10"
echo "load average: $load0 before, $load1 after"
