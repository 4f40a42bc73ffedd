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
# shellcheck source=../flower-local.sh
source "$here/../flower-local.sh"
flower_local_deploy 0-7 8-15

flower_out="$out/flower-ifca"
run_config="data-dir=\"$data\" out=\"$flower_out\" overwrite=true ${FLWR_RUN_CONFIG:-}"
flower_local_run "$here" "$run_config"
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
