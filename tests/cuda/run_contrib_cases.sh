#!/bin/bash
# On the GPU machine: each case of tests/cuda/make_contrib_cases.py converted by the
# bundle's gkrt (tests/cuda/gpu_bundle.sh unpacked in /tmp/gkrt_gpu), run on cuda (or the
# backend given), compared with onnxruntime's outputs made on the CPU machine.
#   bash CASES/run_contrib_cases.sh [cuda|cpu]     (the script copied into the cases' folder)
g=/tmp/gkrt_gpu; B=$g/bin
backend=${1:-cuda}
libdir() {
  local p=$(ldconfig -p | awk -v l="$1" '$1 == l { print $NF; exit }')
  [ -n "$p" ] || p=$(find /usr/local/cuda*/ /usr/lib /opt /usr/local/lib \( -type f -o -type l \) -name "$1" 2>/dev/null | head -1)
  [ -n "$p" ] && dirname "$p"
}
cuda_libs=$(for l in libnvrtc.so.13 libcublasLt.so.13 libcudnn.so.9; do libdir $l; done | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH=$g/lib:$cuda_libs${LD_LIBRARY_PATH:-}
export GKRT_CACHE_DIR=$g/cache
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/gkrt info --cpu | head -2
pass=0; fail=0
for d in case*; do
  $B/gkrt convert $d/model.onnx -o $d/model.gkm > /dev/null 2>$d/err || { echo "$(cat $d/name.txt): convert failed $(tail -c 300 $d/err)"; fail=$((fail+1)); continue; }
  args=""; for f in $d/in_*.npy; do n=$(basename $f .npy); args="$args --input ${n#in_}=$f"; done
  GKRT_LOG=info $B/gkrt run $d/model.gkm --backend $backend --output-dir $d/out $args > /dev/null 2>$d/runerr || { echo "$(cat $d/name.txt): run failed $(tail -c 300 $d/runerr)"; fail=$((fail+1)); continue; }
  r=$(python3 - $d <<'PY'
import sys, glob, os, numpy as np
d = sys.argv[1]; worst = 0.0; ok = True
rtol, atol = map(float, open(os.path.join(d, "tol.txt")).read().split())
for w in glob.glob(os.path.join(d, "want_*.npy")):
    o = os.path.basename(w)[5:]
    want, got = np.load(w), np.load(os.path.join(d, "out", o))
    ok = ok and got.shape == want.shape and np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
    if got.shape == want.shape and want.size: worst = max(worst, float(np.abs(got.astype(np.float64) - want).max()))
print(("ok" if ok else "MISMATCH") + f" max abs err {worst:.2e}")
PY
)
  fb=$(grep -c "it runs on the" $d/runerr)
  echo "$(cat $d/name.txt): $backend $r ($fb nodes on the cpu fallback)"
  case "$r" in ok*) pass=$((pass+1));; *) fail=$((fail+1));; esac
done
echo "contrib cases on $backend: $pass ok, $fail not"
