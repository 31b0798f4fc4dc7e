#!/bin/bash
# The GPU check, in under 10 minutes on a machine with CUDA: (a) the device-parametrised tests on the GPU, (b) the
# speed table of benchmarks/gpu_speed.py: our rnnsearch and luong-general, the installed peers and a Marian of their
# size, training tokens/s and batch-64 / batch-1 decoding, fp32 and bf16. Without CUDA it says so and makes a CPU dry
# run of the table instead (gpu_speed.py --device cpu --quick: it shows that everything runs, it measures nothing).
#
#   benchmarks/gpu_check.sh [TABLE.md]    # default benchmarks/results/gpu-check.md; the JSON beside it (.json)
#
# PYTHON (default: python) is the interpreter with torch (a CUDA build), transformers and pytest; HF_BAHDANAU_PEERS
# is where benchmarks/peers/install_peers.sh put the peers (missing ones are skipped, with a line saying so).
# Exit status 1 when a test or a measurement failed.
set -uo pipefail

# The tests marked `devices` (parametrised over conftest.DEVICES, the contract's autocast checks included), their
# cuda cases: the cpu ones run in every test run.
DEVICE_TESTS=(-m devices -k cuda)
TESTS_TIMEOUT=300                     # seconds, together under 10 minutes (the table: an estimate of 1–4 minutes)
TABLE_TIMEOUT=270

ROOT=$(realpath "$(dirname "$0")/..")
TABLE=$(realpath -m "${1:-$ROOT/benchmarks/results/gpu-check.md}")  # a relative path: from where it is called
PYTHON=${PYTHON:-python}
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # hf_bahdanau from this checkout
status=0
if "$PYTHON" -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
  "$PYTHON" -c "import torch; print('CUDA:', torch.cuda.get_device_name(), '- torch', torch.__version__)"
  echo "== device tests: pytest ${DEVICE_TESTS[*]}"
  timeout "$TESTS_TIMEOUT" "$PYTHON" -m pytest -q -p no:cacheprovider "${DEVICE_TESTS[@]}" tests || status=1
  echo "== speed table -> $TABLE"
  timeout "$TABLE_TIMEOUT" "$PYTHON" benchmarks/gpu_speed.py --device cuda --output "$TABLE" || status=1
else
  echo "No CUDA device (torch $("$PYTHON" -c 'import torch; print(torch.__version__)')): the device tests have no" \
       "GPU to run on; a CPU dry run of the speed table instead (gpu_speed.py --device cpu --quick) -> $TABLE"
  "$PYTHON" benchmarks/gpu_speed.py --device cpu --quick --output "$TABLE" || status=1
fi
exit $status
