#!/usr/bin/env bash
# Build the Python storage driver into a component.
#
#   examples/storage-python/build.sh <output.wasm> [venv-dir]
#
# Creates (or reuses) a virtual environment holding the pinned componentize-py, default
# <repo>/target/python-driver/venv, then componentizes app.py against the WIT world
# agmsg:storage/storage-driver@1.2.0 into <output.wasm> (kept when its inputs did not change, see
# below). `PYTHON` picks the interpreter (default python3).
# Exits non-zero with a message on stderr when Python, venv or pip is missing or a step fails.
set -euo pipefail

# Pinned for reproducible components; see README.md before changing it. The sha256 of each platform's
# wheel PyPI has for that version, from https://pypi.org/simple/componentize-py/: pip refuses a
# download that matches none of them, and never builds the source archive instead (--only-binary).
COMPONENTIZE_PY_VERSION=0.25.1
COMPONENTIZE_PY_SHA256=(
    8623cd8cab8453cb0cd8bf03f3c7103420d06f2f3d360186a280a70a1ca5e89f # manylinux_2_28_x86_64
    7b6a87c520358166843af0daa86d2312d7af4cbcbbf1e598951085cf7f2991ca # manylinux_2_28_aarch64
    65fbc4a94df1de8acf7da50a1f5ed1711230188844e53e6332d99029be4e0afa # macosx_10_12_x86_64
    a556991534cc496207a9d2ca733c4b0f17ed38ef56a8d6b5f1847fdf1225dd1b # macosx_11_0_arm64
    c7fd552fb0849858b0c1e8981543ed5dff4b0cc1597a8ea0bc26a495786dc0c6 # win_amd64
)
WORLD=agmsg:storage/storage-driver@1.2.0

die() {
    echo "build.sh: $*" >&2
    exit 1
}

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: build.sh <output.wasm> [venv-dir]"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$1
venv=${2:-$repo/target/python-driver/venv}
python=${PYTHON:-python3}

command -v "$python" >/dev/null 2>&1 || die "'$python' not found: the Python driver needs CPython 3 with venv and pip (set PYTHON to use another interpreter)"
"$python" -c 'import venv, ensurepip' 2>/dev/null \
    || die "'$python' has no working venv/ensurepip module (on Debian/Ubuntu: apt-get install python3-venv)"

if [ "$("$venv/bin/componentize-py" --version 2>/dev/null)" != "componentize-py $COMPONENTIZE_PY_VERSION" ]; then
    echo "build.sh: installing componentize-py==$COMPONENTIZE_PY_VERSION into $venv" >&2
    "$python" -m venv "$venv" || die "creating the virtual environment $venv failed"
    "$venv/bin/python" -m pip --version >/dev/null 2>&1 || die "the virtual environment $venv has no pip"
    # One requirement with its hashes; it has no dependencies (--no-deps: nothing unhashed comes along).
    requirements=$(mktemp "${TMPDIR:-/tmp}/componentize-py.XXXXXX.txt")
    {
        printf 'componentize-py==%s' "$COMPONENTIZE_PY_VERSION"
        printf ' --hash=sha256:%s' "${COMPONENTIZE_PY_SHA256[@]}"
        printf '\n'
    } >"$requirements"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        --require-hashes --no-deps --only-binary :all: -r "$requirements" \
        || { rm -f "$requirements"; die "pip install componentize-py==$COMPONENTIZE_PY_VERSION failed (is PyPI reachable? does the download match a pinned sha256?)"; }
    rm -f "$requirements"
fi

# componentize-py's output differs from run to run (the pre-initialized interpreter's heap), and every
# new component costs the host a fresh native compile and a new compile-cache entry. So an output built
# from the same inputs (app, WIT, pinned version) is kept; delete it to force a rebuild.
inputs=$( { echo "componentize-py $COMPONENTIZE_PY_VERSION $WORLD"; cat "$here/app.py";
            find "$repo/wit/host" "$repo/wit/storage" -type f -name '*.wit' | LC_ALL=C sort | xargs cat; } \
          | sha256sum | cut -d' ' -f1)
if [ -f "$out" ] && [ "$(cat "$out.inputs" 2>/dev/null)" = "$inputs" ]; then
    echo "build.sh: $out is up to date" >&2
    exit 0
fi

# componentize-py puts the app's directory into the component and writes __pycache__ there, so it gets a
# staging directory holding only app.py rather than the source tree.
stage=$(mktemp -d "${TMPDIR:-/tmp}/storage-python.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cp "$here/app.py" "$stage/app.py"

mkdir -p "$(dirname "$out")"
# Two WIT packages: agmsg:host (what the world imports) and agmsg:storage (the world itself).
"$venv/bin/componentize-py" --quiet \
    -d "$repo/wit/host" -d "$repo/wit/storage" -w "$WORLD" \
    componentize app -p "$stage" -o "$out.tmp" \
    || die "componentize-py failed"
mv "$out.tmp" "$out"
echo "$inputs" > "$out.inputs"
echo "build.sh: wrote $out" >&2
