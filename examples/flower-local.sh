# Flower's deployment engine on this machine, for the examples' run.sh scripts
# (sourced, not run): `flower_local_deploy CLIENTS...` starts a SuperLink and
# one SuperNode per client range (e.g. 0-49 50-99) on free ports of 127.0.0.1,
# and writes the `local-deployment` connection `flwr` uses; `flower_local_run
# APP RUN_CONFIG` runs the app there and fails unless the run completed.
# Flower's state lives in "$home" (the caller's, e.g. APP/.flwr: FLWR_HOME),
# never in ~/.flwr, its logs in "$logs"; everything started here is stopped
# when the calling script ends, however it ends.

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

flower_local_deploy() {
    local node=0
    port=$(free_port)
    start superlink flower-superlink --insecure --host 127.0.0.1 --port "$port" \
        --disable-runtime-dependency-installation
    wait_for_port "$port" "${started[0]}" superlink
    echo "SuperLink listening on 127.0.0.1:$port (log: $logs/superlink.log)"

    for clients in "$@"; do
        start "supernode$node" flower-supernode --insecure --superlink "127.0.0.1:$port" \
            --host 127.0.0.1 --port "$(free_port)" --node-config "clients=\"$clients\""
        node=$((node + 1))
    done

    # The connection `flwr` uses, in the example's own Flower directory:
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
}

# flower_local_run APP RUN_CONFIG: `flwr run` of APP on the deployment
# (in the background, waited for: a signal to the script then stops it at
# once); fails unless the run completed.
flower_local_run() {
    flwr run "$1" local-deployment --run-config "$2" --stream &
    started+=("$!")
    wait "$!"
    # The SuperLink keeps its state in memory: its one run is this one.
    local status
    status=$(flwr ls local-deployment --format json | python3 -c \
        'import json, sys; runs = json.load(sys.stdin).get("runs", []); print(runs[-1]["status"] if runs else "none")')
    if [[ "$status" != "finished:completed" ]]; then
        echo "error: the Flower run ended as $status; logs in $logs/" >&2
        exit 1
    fi
}
