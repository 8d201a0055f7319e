#!/bin/sh
# bench.sh [CCRUN] [N] — the CLI side by side: `CCRUN exec --wasm hello.wasm`
# against `wazero run -cachedir DIR hello.wasm`, both as new processes with a
# warm disk cache, N runs each (default 50); prints the medians and the ratio.
# CCRUN defaults to bin/ccrun. Installs the peer with `go install` when it is
# not on PATH or in $(go env GOPATH)/bin.
# It also times `CCRUN_WASM_SERVER=1 CCRUN exec --wasm hello.wasm` with the
# warm server running (a server of its own: XDG_RUNTIME_DIR in a temporary
# directory; stopped with SIGTERM at the end).
set -eu
CCRUN=${1:-bin/ccrun}
N=${2:-50}
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
mkdir -m 700 "$work/run"
stop_server() {
	if [ -f "$work/run/ccrun/wasm.sock.lock" ]; then
		pid=$(cat "$work/run/ccrun/wasm.sock.lock" 2>/dev/null || true)
		[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap stop_server EXIT

peer=$(command -v wazero || true)
if [ -z "$peer" ]; then
	peer="$($GO env GOPATH)/bin/wazero"
	if [ ! -x "$peer" ] || ! "$peer" version 2>/dev/null | grep -q 'v1.12.0'; then
		echo "installing wazero v1.12.0" >&2
		$GO install github.com/tetratelabs/wazero/cmd/wazero@v1.12.0
	fi
fi
[ -x "$CCRUN" ] || { echo "bench.sh: $CCRUN not found; run make build" >&2; exit 1; }

hello="$work/hello.wasm"
(cd "$here/hello" && GOOS=wasip1 GOARCH=wasm $GO build -o "$hello" .)

ours() { "$CCRUN" exec --approve once --wasm "$hello" >/dev/null; }
served() { CCRUN_WASM_SERVER=1 XDG_RUNTIME_DIR="$work/run" "$CCRUN" exec --approve once --wasm "$hello" >/dev/null; }
theirs() { "$peer" run -cachedir "$work/peer-cache" "$hello" >/dev/null; }

# Warm both disk caches.
ours; ours; theirs; theirs
served; sleep 1; served; served # start the server, let it compile
[ -S "$work/run/ccrun/wasm.sock" ] || { echo "bench.sh: the wasm server did not start" >&2; exit 1; }

# median NAME: time N runs of the function NAME, print the median in ms.
median() {
	i=0
	: >"$work/times"
	while [ $i -lt "$N" ]; do
		t0=$(date +%s%N)
		"$1"
		t1=$(date +%s%N)
		echo $(( (t1 - t0) / 1000 )) >>"$work/times"
		i=$((i + 1))
	done
	sort -n "$work/times" | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]/1000}'
}

a=$(median ours)
b=$(median theirs)
c=$(median served)
echo "ccrun exec --wasm hello.wasm                      p50 ${a} ms  ($CCRUN, $N runs)"
echo "CCRUN_WASM_SERVER=1 ccrun exec --wasm hello.wasm  p50 ${c} ms  (warm server)"
echo "wazero run -cachedir D hello.wasm                 p50 ${b} ms  ($peer)"
awk -v a="$a" -v b="$b" 'BEGIN {printf "ratio ccrun/wazero, in process: %.2f (goal <= 0.70)\n", a/b}'
awk -v c="$c" -v b="$b" 'BEGIN {printf "ratio ccrun/wazero, warm server: %.2f (goal <= 0.70)\n", c/b}'
