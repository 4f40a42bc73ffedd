#!/usr/bin/env bash
# GPU smoke check for the device machine (issue 44): ResNet9 and the char-LSTM
# on the CUDA backend against the CPU, twice on CUDA for run-to-run identity.
# The device has no Rust: build here, then carry the stripped, xz'd binary
# (the whole tree that travels must stay under 64 MiB):
#   cargo build --release --locked -p fedcluster-cli --features cuda
#   mkdir -p gpu-smoke && echo /gpu-smoke/ >> .git/info/exclude
#   strip -o /tmp/fc-cuda target/release/fedcluster && xz -9e -c /tmp/fc-cuda > gpu-smoke/fedcluster.xz
#   cp scripts/gpu-smoke.sh gpu-smoke/run.sh      # then, on the device: bash gpu-smoke/run.sh (carry gpu-smoke)
# Results under $OUT: times.txt, metrics.txt (every run's metrics.csv), each run's table.
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('gpu-smoke/fedcluster.xz'), open('/tmp/fedcluster', 'wb'))" && chmod +x /tmp/fedcluster
B=/tmp/fedcluster
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $OUT/device.txt
ls /usr/local/cuda*/lib64/libnvrtc* 2>/dev/null | head -3 | tee -a $OUT/device.txt
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$(ls -d /usr/local/cuda*/lib64 2>/dev/null | head -1)"
t() { local name=$1; shift; local s=$EPOCHREALTIME; timeout 120 "$@" > $OUT/$name.txt 2>&1; local rc=$?; echo "$name rc=$rc $(awk "BEGIN{print $EPOCHREALTIME - $s}") s" | tee -a $OUT/times.txt; tail -16 $OUT/$name.txt; }
R9="configs/ifca-synthetic-images-resnet9.toml --set rounds=2"
LS="configs/ifca-synthetic-text-char-lstm.toml --set rounds=2"
t resnet9-cuda-a $B run $R9 --set model.backend=cuda --out /tmp/r9a -q
t resnet9-cuda-b $B run $R9 --set model.backend=cuda --out /tmp/r9b -q
t resnet9-cpu $B run $R9 --out /tmp/r9c -q
t lstm-cuda $B run $LS --set model.backend=cuda --out /tmp/lsa -q
t lstm-cpu $B run $LS --out /tmp/lsc -q
for d in r9a r9b r9c lsa lsc; do echo "== $d"; cat /tmp/$d/metrics.csv; done > $OUT/metrics.txt 2>&1
cmp /tmp/r9a/metrics.csv /tmp/r9b/metrics.csv && echo "resnet9 cuda: metrics.csv identical run to run" | tee -a $OUT/times.txt
cat $OUT/times.txt
