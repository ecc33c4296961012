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

# Pinned for reproducible components; see README.md before changing it.
COMPONENTIZE_PY_VERSION=0.25.1
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
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        "componentize-py==$COMPONENTIZE_PY_VERSION" \
        || die "pip install componentize-py==$COMPONENTIZE_PY_VERSION failed (is PyPI reachable?)"
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
