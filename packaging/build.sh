#!/usr/bin/env bash
# Builds Workbench's artifacts into dist/: wheels and sdists of workbench, workbench-mnn and the
# device agent, and the Debian package workbench_<version>_amd64.deb. See packaging/README.md.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACKAGING="$REPO/packaging"
DIST="$REPO/dist"
BUILD="$REPO/build"
# The .deb's environment runs on the system's Python, as its Depends says.
SYSTEM_PYTHON="${WORKBENCH_SYSTEM_PYTHON:-/usr/bin/python3.11}"
TORCH_REQUIREMENT="torch==2.13.0"
PREFIX="/opt/workbench"

usage() {
    cat <<USAGE
Usage: bash packaging/build.sh [--version V] [--only LIST] [--help]

Builds into dist/:
  wheels  wheels and sdists of workbench, workbench-mnn (plugins/workbench-mnn) and
          workbench-device-agent (device_sdk), with python -m build
  deb     workbench_<V>_amd64.deb: a Python environment on $SYSTEM_PYTHON in $PREFIX
          with Workbench, the agent, the MNN plugin and their dependencies

Options:
  --version V   The version to build (default: __version__ of workbench/__init__.py).
                Another version is set in a copy of the sources, never in the checkout.
  --only LIST   Comma-separated artifacts among: wheels,deb (default: wheels,deb).
  -h, --help    Show this help.

Everything it needs (build, the packages of the environment) comes from pip's configured
indexes into build/; dpkg-deb and $SYSTEM_PYTHON must be present.
USAGE
}

die() { echo "build.sh: $*" >&2; exit 2; }
step() { echo "==> $*"; }

VERSION=""
ONLY="wheels,deb"
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --version) [ $# -ge 2 ] || die "--version needs a value, e.g. --version 0.1.1"; VERSION="$2"; shift 2 ;;
        --version=*) VERSION="${1#--version=}"; shift ;;
        --only) [ $# -ge 2 ] || die "--only needs a value, e.g. --only deb"; ONLY="$2"; shift 2 ;;
        --only=*) ONLY="${1#--only=}"; shift ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done

BUILD_WHEELS=0; BUILD_DEB=0
IFS=',' read -ra ARTIFACTS <<< "$ONLY"
[ ${#ARTIFACTS[@]} -gt 0 ] || die "--only needs at least one of: wheels,deb"
for artifact in "${ARTIFACTS[@]}"; do
    case "$artifact" in
        wheels) BUILD_WHEELS=1 ;;
        deb) BUILD_DEB=1 ;;
        *) die "unknown artifact '$artifact' in --only (choose among: wheels,deb)" ;;
    esac
done

SOURCE_VERSION="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$REPO/workbench/__init__.py")"
[ -n "$SOURCE_VERSION" ] || die "no __version__ = \"...\" line in workbench/__init__.py"
VERSION="${VERSION:-$SOURCE_VERSION}"
# PEP 440 public versions as Workbench uses them: 1.2.3, 1.2.3rc1, 1.2.3.post1, 1.2.3.dev4
[[ "$VERSION" =~ ^[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$ ]] \
    || die "version '$VERSION' is not a version like 1.2.3, 1.2.3rc1 or 1.2.3.dev1"
# Debian sorts ~ before anything, so pre-releases and dev builds come before the release.
DEB_VERSION="$(echo "$VERSION" | sed -E 's/\.?(a|b|rc)([0-9]+)/~\1\2/; s/\.dev([0-9]+)/~dev\1/; s/\.post([0-9]+)/+post\1/')"

[ -x "$SYSTEM_PYTHON" ] || die "$SYSTEM_PYTHON is missing: install python3.11 and python3.11-venv (apt-get install python3.11-venv)"
command -v git >/dev/null || die "git is missing: the sources to build are what git tracks (apt-get install git)"
if [ $BUILD_DEB = 1 ]; then
    command -v dpkg-deb >/dev/null || die "dpkg-deb is missing: the .deb is built on Debian or Ubuntu (apt-get install dpkg-dev)"
    command -v readelf >/dev/null || die "readelf is missing: it checks the .deb's Depends against the libraries it needs (apt-get install binutils)"
fi

START=$(date +%s)
mkdir -p "$DIST" "$BUILD"

# The sources are copied (what git tracks plus new files it does not ignore), so a version other
# than the checkout's is set in the copy and the checkout is never written to.
step "Copying the sources of version $VERSION into build/src"
rm -rf "$BUILD/src"; mkdir -p "$BUILD/src"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf -) | tar -xf - -C "$BUILD/src"
if [ "$VERSION" != "$SOURCE_VERSION" ]; then
    for init in workbench/__init__.py device_sdk/workbench_device/__init__.py plugins/workbench-mnn/workbench_mnn/__init__.py; do
        sed -i "s/^__version__ = \".*\"$/__version__ = \"$VERSION\"/" "$BUILD/src/$init"
    done
fi

step "Preparing the build tools in build/tools-venv"
if [ ! -x "$BUILD/tools-venv/bin/python" ]; then
    "$SYSTEM_PYTHON" -m venv "$BUILD/tools-venv"
fi
"$BUILD/tools-venv/bin/python" -m pip install -q build 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }

WHEELS="$BUILD/wheels"
rm -rf "$WHEELS"; mkdir -p "$WHEELS"
for project in . plugins/workbench-mnn device_sdk; do
    step "Building the wheel and sdist of ${project/#./workbench}"
    t0=$(date +%s)
    "$BUILD/tools-venv/bin/python" -m build --outdir "$WHEELS" "$BUILD/src/$project" > "$BUILD/build-$(basename "$(cd "$BUILD/src/$project" && pwd)").log" 2>&1 \
        || { tail -30 "$BUILD/build-$(basename "$(cd "$BUILD/src/$project" && pwd)").log"; die "python -m build failed for $project (log above)"; }
    echo "    $(( $(date +%s) - t0 )) s"
done
if [ $BUILD_WHEELS = 1 ]; then
    cp "$WHEELS"/*-"$VERSION"-*.whl "$WHEELS"/*-"$VERSION".tar.gz "$DIST/"
fi

if [ $BUILD_DEB = 1 ]; then
    source "$PACKAGING/deb/build-deb.sh"
fi

step "Done in $(( $(date +%s) - START )) s"
if [ $BUILD_WHEELS = 1 ]; then
    ls -l "$DIST"/*-"$VERSION"-*.whl "$DIST"/*-"$VERSION".tar.gz | awk '{printf "    %8.1f MB  %s\n", $5/1048576, $9}'
fi
if [ $BUILD_DEB = 1 ]; then
    ls -l "$DEB_FILE" | awk '{printf "    %8.1f MB  %s\n", $5/1048576, $9}'
fi
