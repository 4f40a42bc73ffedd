#!/usr/bin/env bash
# IFCA on Flower's deployment engine, on this machine: a SuperLink and two
# SuperNodes (clients 0-49 and 50-99 of flower_ifca/ifca-synthetic-small.toml),
# then `flwr run` of this app, which writes a fedcluster run directory.
#
#   examples/flower-ifca/run.sh [OUT]      # OUT: the run directory (default
#                                          # examples/flower-ifca/runs/flower-ifca)
#
# Needs `pip install './python[flower]'` (fedcluster and Flower 1.41.0). Flower's
# state and its CLI's config live in examples/flower-ifca/.flwr/ (FLWR_HOME),
# never in ~/.flwr; the processes listen on free ports of 127.0.0.1 only, and
# everything this script starts is stopped when it ends, however it ends.
# Extra `flwr run --run-config` settings: FLWR_RUN_CONFIG='rounds=12'.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(python3 -c 'import os, sys; print(os.path.abspath(sys.argv[1]))' "${1:-$here/runs/flower-ifca}")"
home="$here/.flwr"
logs="$home/logs"

for tool in flower-superlink flower-supernode flwr python3; do
    command -v "$tool" >/dev/null || {
        echo "error: $tool is not on PATH: pip install './python[flower]' (from the repository root)" >&2
        exit 1
    }
done

# shellcheck source=../flower-local.sh
source "$here/../flower-local.sh"
flower_local_deploy 0-49 50-99

mkdir -p "$(dirname "$out")"
run_config="out=\"$out\" overwrite=true ${FLWR_RUN_CONFIG:-}"
flower_local_run "$here" "$run_config"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
s = json.load(open(f"{out}/summary.json"))
f = {k: "-" if v is None else f"{v:.4g}" for k, v in s["final"].items()}
print(f"\nfedcluster run directory: {out}")
print(f"  {s['rounds']} rounds of {s['algorithm']}: final misclustering {f['misclustering']}, "
      f"training loss {f['train_loss']}, parameter error {f['param_error']}")
print(f"  metrics.csv (a row per round), curves.svg (the training curves), summary.json, "
      f"models.safetensors")
PY
