#!/usr/bin/env bash
# Download the wheels benchmarks/gpu_check.sh installs offline on the device machine (it has no
# network): numpy, pyopencl (and its dependencies), z3-solver, tqdm, pytest, pytest-xdist, hypothesis,
# setuptools and wheel, for one CPython version (default: this python3's; the device machine's must
# match) on x86-64 Linux. About 50 MB for one version (z3 29 MB, numpy 17 MB): carry the folder.
#
#   benchmarks/gpu_wheels.sh [PYTHON_VERSION] [FOLDER]     # defaults: this python3's X.Y, wheels/
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')}
dir=${2:-wheels}
mkdir -p "$dir"
python3 -m pip download --quiet --dest "$dir" --only-binary=:all: --python-version "$py" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any \
    "numpy>=1.24" "pyopencl>=2024.1" "z3-solver>=4.12" "tqdm>=4.60" "pytest>=7" "pytest-xdist>=3" \
    "hypothesis>=6.80" "setuptools>=64" wheel
echo "wheels for CPython $py in $dir: $(ls "$dir" | wc -l) files, $(du -sh "$dir" | cut -f1)"
