#!/usr/bin/env bash
# Your own CNN on your own images, clustered, from Python and on Flower:
#   1. run.py writes the image data set (data/federation, fedcluster.data.save)
#      and runs IFCA, SR-FCA and the FedAvg baseline on it with the PyTorch CNN
#      (OUT/ifca, OUT/srfca, OUT/global);
#   2. the same IFCA run as a Flower app on this machine: a SuperLink, two
#      SuperNodes (clients 0-7 and 8-15), `flwr run` of this app (OUT/flower-ifca).
#
#   examples/own-model/run.sh [OUT]     # OUT: default examples/own-model/runs
#
# Needs `pip install './python[flower,torch]'` (fedcluster, Flower 1.41.0,
# PyTorch). Flower's state and its CLI's config live in examples/own-model/.flwr/
# (FLWR_HOME), never in ~/.flwr; the processes listen on free ports of 127.0.0.1
# only, and everything this script starts is stopped when it ends, however it ends.
# Extra `flwr run --run-config` settings: FLWR_RUN_CONFIG='config="srfca.toml"'.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(python3 -c 'import os, sys; print(os.path.abspath(sys.argv[1]))' "${1:-$here/runs}")"
data="$here/data/federation"
home="$here/.flwr"
logs="$home/logs"

for tool in flower-superlink flower-supernode flwr python3; do
    command -v "$tool" >/dev/null || {
        echo "error: $tool is not on PATH: pip install './python[flower,torch]' (from the repository root)" >&2
        exit 1
    }
done

python3 "$here/run.py" --out "$out" --data "$data"
echo
# Flower sends usage events to its servers unless told not to.
export FLWR_TELEMETRY_ENABLED=0
mkdir -p "$logs"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Every process started here leads its own process group (job control on), so
# stopping a group stops what it spawned too (the ServerApp, the ClientApps).
set -m
started=()
stop_all() {
    local status=$?
    trap - EXIT INT TERM
    set +m # no "Terminated" notices for the jobs stopped now
    # (`${started[@]+...}`: an empty array under `set -u` in bash 3.2, macOS's.)
    for pid in ${started[@]+"${started[@]}"}; do
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    for pid in ${started[@]+"${started[@]}"}; do
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL -- "-$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    exit "$status"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME COMMAND...: runs COMMAND in the background with its own
# FLWR_HOME under .flwr/, its output in .flwr/logs/NAME.log.
start() {
    local name=$1
    shift
    mkdir -p "$home/$name"
    FLWR_HOME="$home/$name" "$@" >"$logs/$name.log" 2>&1 &
    started+=("$!")
}

# Waits until 127.0.0.1:PORT accepts connections (and the process is alive).
wait_for_port() {
    local port=$1 pid=$2 name=$3
    for _ in $(seq 300); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "error: the $name stopped; its log:" >&2
            cat "$logs/$name.log" >&2
            exit 1
        fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.2
    done
    echo "error: the $name does not accept connections on 127.0.0.1:$port after 60 s; see $logs/$name.log" >&2
    exit 1
}

port=$(free_port)
start superlink flower-superlink --insecure --host 127.0.0.1 --port "$port" \
    --disable-runtime-dependency-installation
wait_for_port "$port" "${started[0]}" superlink
echo "SuperLink listening on 127.0.0.1:$port (log: $logs/superlink.log)"

node=0
for clients in 0-7 8-15; do
    start "supernode$node" flower-supernode --insecure --superlink "127.0.0.1:$port" \
        --host 127.0.0.1 --port "$(free_port)" --node-config "clients=\"$clients\""
    node=$((node + 1))
done

# The connection `flwr` uses, in this example's own Flower directory:
# written whole on every run (never appended to).
export FLWR_HOME="$home/cli"
mkdir -p "$FLWR_HOME"
cat >"$FLWR_HOME/config.toml" <<TOML
[superlink]
default = "local-deployment"

[superlink.local-deployment]
address = "127.0.0.1:$port"
insecure = true
TOML

flower_out="$out/flower-ifca"
run_config="data-dir=\"$data\" out=\"$flower_out\" overwrite=true ${FLWR_RUN_CONFIG:-}"
# In the background, waited for: a signal to this script then stops it at once.
flwr run "$here" local-deployment --run-config "$run_config" --stream &
started+=("$!")
wait "$!"

# The SuperLink keeps its state in memory: its one run is this one.
status=$(flwr ls local-deployment --format json | python3 -c \
    'import json, sys; runs = json.load(sys.stdin).get("runs", []); print(runs[-1]["status"] if runs else "none")')
if [[ "$status" != "finished:completed" ]]; then
    echo "error: the Flower run ended as $status; logs in $logs/" >&2
    exit 1
fi
python3 - "$flower_out" "$out" <<'PY'
import json, sys
flower, out = sys.argv[1], sys.argv[2]
s = json.load(open(f"{flower}/summary.json"))
python = f"{out}/{s['algorithm']}"
f = {k: "-" if v is None else f"{v:.3g}" for k, v in s["final"].items()}
print(f"\nfedcluster run directory (Flower): {flower}")
print(f"  {s['rounds']} rounds of {s['algorithm']}: final misclustering {f['misclustering']}, "
      f"test accuracy {f['test_accuracy']}, clusters found {f['clusters_found']}")
same = open(f"{flower}/metrics.csv").read().split("\n") == open(f"{python}/metrics.csv").read().split("\n")
print(f"  metrics.csv the same as run.py's run of {s['algorithm']} ({python}): {'yes' if same else 'no'}")
PY
