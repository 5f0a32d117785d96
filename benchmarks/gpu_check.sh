#!/usr/bin/env bash
# The GPU check on the device machine, which has no network: install liftcl and its dependencies
# offline from wheels/ (benchmarks/gpu_wheels.sh fills it; carry it), make NVIDIA's OpenCL driver
# visible to pyopencl's ICD loader when no vendors file names it, then run benchmarks/gpu_check.py
# with the arguments given (JSON into $OUT). PoCL is not installed there: the GPU is the device.
#
#   benchmarks/gpu_check.sh [gpu_check.py options]     # e.g. --phases measure --only matmul
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
wheels=${LIFTCL_WHEELS:-wheels}
venv=${LIFTCL_GPU_VENV:-/tmp/liftcl-gpu-venv}
py=${PYTHON:-python3}
if ! "$venv/bin/python" -c "import lift, pyopencl, z3" 2>/dev/null; then
    "$py" -m venv "$venv"
    if ! "$venv/bin/python" -m pip install --quiet --no-index --find-links "$wheels" numpy pyopencl z3-solver tqdm \
            pytest pytest-xdist hypothesis setuptools wheel; then
        echo "gpu_check: the wheels in $wheels do not install on $("$py" --version 2>&1);" \
             "run benchmarks/gpu_wheels.sh with that version. Present:" >&2
        ls "$wheels" >&2 || true
        exit 3
    fi
    "$venv/bin/python" -m pip install --quiet --no-index --find-links "$wheels" --no-deps --no-build-isolation -e .
fi
has_gpu='import sys, pyopencl as cl
sys.exit(0 if any(d.type & cl.device_type.GPU for p in cl.get_platforms() for d in p.get_devices()) else 1)'
if ! "$venv/bin/python" -c "$has_gpu" 2>/dev/null; then
    lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1 /{print $NF; exit}')
    if [ -z "$lib" ]; then
        for guess in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/lib; do
            if [ -e "$guess/libnvidia-opencl.so.1" ]; then lib="$guess/libnvidia-opencl.so.1"; break; fi
        done
    fi
    if [ -n "$lib" ]; then
        icd=/tmp/liftcl-gpu-icd
        mkdir -p "$icd"
        cp /etc/OpenCL/vendors/*.icd "$icd/" 2>/dev/null || true
        echo "$lib" > "$icd/nvidia-liftcl.icd"
        export OCL_ICD_VENDORS="$icd"
        echo "gpu_check: registered $lib with the ICD loader (OCL_ICD_VENDORS=$icd)"
    else
        echo "gpu_check: OpenCL lists no GPU and no libnvidia-opencl.so.1 was found" >&2
    fi
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null || true
exec "$venv/bin/python" benchmarks/gpu_check.py --setup-seconds "$(( $(date +%s) - start ))" "$@"
