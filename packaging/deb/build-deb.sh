# Sourced by packaging/build.sh with REPO, PACKAGING, BUILD, DIST, WHEELS, VERSION, DEB_VERSION,
# SYSTEM_PYTHON, TORCH_REQUIREMENT and PREFIX set. Builds dist/workbench_<version>_amd64.deb: a
# venv made in a staging root, moved in thought to $PREFIX (its paths rewritten), and dpkg-deb.

DEB_DATA="$PACKAGING/deb"
STAGE="$BUILD/deb/root"
VENV="$STAGE$PREFIX"
SITE="$VENV/lib/python3.11/site-packages"
DEB_FILE="$DIST/workbench_${DEB_VERSION}_amd64.deb"
# Nothing the build runs from the staged environment may leave bytecode naming the staging path.
export PYTHONDONTWRITEBYTECODE=1

# pip names every configured index that lacks a project; only its real messages are shown.
pip_install() {
    local status=0
    "$VENV/bin/python" -m pip install -q --no-compile --no-warn-script-location "$@" 2>&1 \
        | { grep -v 'is ignored: it is neither a file nor a directory' || true; } || status=$?
    [ "$status" = 0 ] || die "pip install $* failed (its messages above)"
}

step "Making the environment $PREFIX in build/deb/root on $SYSTEM_PYTHON"
t0=$(date +%s)
rm -rf "$BUILD/deb"; mkdir -p "$STAGE"
"$SYSTEM_PYTHON" -m venv "$VENV"
pip_install --upgrade pip
# torch first, exactly this CPU build, so nothing that depends on torch brings another one.
step "Installing $TORCH_REQUIREMENT"
pip_install "$TORCH_REQUIREMENT"
step "Installing Workbench, the device agent and the MNN plugin (non-editable, from the wheels)"
pip_install \
    "$TORCH_REQUIREMENT" \
    "$WHEELS/workbench-$VERSION-py3-none-any.whl" \
    "$WHEELS/workbench_device_agent-$VERSION-py3-none-any.whl" \
    "$WHEELS/workbench_mnn-$VERSION-py3-none-any.whl"
"$VENV/bin/python" -m pip check || die "the environment's dependencies do not agree (pip check above)"
echo "    environment installed in $(( $(date +%s) - t0 )) s"

step "Rendering the icons"
ICON_SVG="$REPO/resources/icons/workbench.svg"
ICONS="$STAGE/usr/share/icons/hicolor"
install -D -m 644 "$ICON_SVG" "$ICONS/scalable/apps/workbench.svg"
QT_QPA_PLATFORM=offscreen "$VENV/bin/python" - "$ICON_SVG" "$ICONS" <<'PY'
import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

svg, icons = sys.argv[1], Path(sys.argv[2])
app = QGuiApplication([])
renderer = QSvgRenderer(svg)
if not renderer.isValid():
    sys.exit(f"{svg} is not an SVG Qt can render")
for size in (16, 24, 32, 48, 64, 128, 256):
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    target = icons / f"{size}x{size}" / "apps" / "workbench.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(target), "PNG"):
        sys.exit(f"could not write {target}")
PY

step "Checking the system libraries the environment's native code needs against Depends"
# The NEEDED entries of every shared object, resolved outside the environment, mapped to their
# packages. What Workbench loads (every non-Qt extension, and Qt's libraries and plugins on the
# path of the xcb platform) must come from a package depends.txt lists; the rest of PySide6's
# plugins (GTK theme, SQL drivers, Wayland compositor, QML, ...) are reported, not required.
DEPENDS_LIST="$(grep -v '^#' "$DEB_DATA/depends.txt" | sed '/^\s*$/d')"
RECOMMENDS_LIST="$(grep -v '^#' "$DEB_DATA/recommends.txt" | sed '/^\s*$/d')"
"$SYSTEM_PYTHON" - "$VENV" "$BUILD/deb/system-libraries.txt" $DEPENDS_LIST <<'PY'
import os, re, subprocess, sys
from collections import defaultdict
from pathlib import Path

env, report, declared = Path(sys.argv[1]).resolve(), Path(sys.argv[2]), set(sys.argv[3:])
site = next(env.glob("lib/python3.*/site-packages"))
qt = site / "PySide6" / "Qt"
loaded_qt_modules = ["QtCore", "QtGui", "QtWidgets", "QtNetwork", "QtSvg", "QtSvgWidgets",
                     "QtPrintSupport", "QtOpenGL", "QtOpenGLWidgets", "QtDBus"]
loaded_plugin_folders = ["platforms", "xcbglintegrations", "imageformats", "iconengines",
                         "platforminputcontexts", "tls", "generic"]

by_name, elfs = {}, []
for root, _dirs, files in os.walk(env):
    for f in files:
        p = Path(root, f)
        if ".so" not in f:
            continue
        by_name.setdefault(f, p.resolve())
        if not p.is_symlink():
            with open(p, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    elfs.append(p)

def needed(p):
    out = subprocess.run(["readelf", "-d", str(p)], capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", out)

needs = {p: needed(p) for p in elfs}
roots = [p for p in elfs if "PySide6" not in p.parts]
roots += [p for p in elfs if p.parent == site / "PySide6" and p.name.split(".")[0] in loaded_qt_modules]
# A plugin needing a Qt library PySide6-Essentials lacks (PDF, virtual keyboard) is skipped by Qt.
roots += [p for p in elfs if p.parent.parent == qt / "plugins" and p.parent.name in loaded_plugin_folders
          and (p.parent.name != "platforms" or p.name in ("libqxcb.so", "libqoffscreen.so", "libqminimal.so"))
          and all(n in by_name for n in needs[p] if n.startswith("libQt6"))]
required, todo = set(), list(roots)
while todo:
    p = todo.pop()
    if p in required:
        continue
    required.add(p)
    for name in needs.get(p, []):
        inside = by_name.get(name)
        if inside is not None:
            todo.append(inside)

ldcache = {}
for line in subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines()[1:]:
    m = re.match(r"\s*(\S+) \((.*?)\) => (\S+)", line)
    if m and "x86-64" in m.group(2):
        ldcache.setdefault(m.group(1), m.group(3))

def package_of(path):
    real = os.path.realpath(path)
    for candidate in (path, real, "/usr" + real, real.removeprefix("/usr")):
        r = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0]
    return "?"

libs = defaultdict(lambda: [False, None])  # soname -> [required, an example user]
for p, names in needs.items():
    for name in names:
        if name in by_name:
            continue
        entry = libs[name]
        if p in required and not entry[0]:
            entry[0], entry[1] = True, p
        elif entry[1] is None:
            entry[1] = p
# Base system (essential, or pulled by python3.11 itself).
base = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}
problems, lines = [], []
for name in sorted(libs):
    is_required, user = libs[name]
    path = ldcache.get(name)
    pkg = package_of(path) if path else "(not on this machine)"
    rel = os.path.relpath(user, env)
    lines.append(f"{'required' if is_required else 'optional'}\t{name}\t{pkg}\t{rel}")
    if is_required and (path is None or (pkg not in declared and pkg not in base)):
        problems.append(f"{name} ({pkg}), needed by {rel}")
report.write_text("\n".join(lines) + "\n")
optional_pkgs = sorted({l.split("\t")[2] for l in lines if l.startswith("optional")} - declared - base)
print(f"    {sum(1 for l in lines if l.startswith('required'))} system libraries needed, all from declared packages"
      if not problems else "")
print(f"    optional plugins of PySide6 would also use: {', '.join(optional_pkgs)}")
if problems:
    sys.exit("build.sh: packaging/deb/depends.txt lacks the package of:\n  " + "\n  ".join(problems))
PY
DEPENDS="$(echo "$DEPENDS_LIST" | paste -sd, | sed 's/,/, /g')"
RECOMMENDS="$(echo "$RECOMMENDS_LIST" | paste -sd, | sed 's/,/, /g')"

step "Laying out /usr: commands, menu entry, MIME types, the agent's user unit"
mkdir -p "$STAGE/usr/bin"
ln -s "$PREFIX/bin/workbench" "$STAGE/usr/bin/workbench"
ln -s "$PREFIX/bin/workbench-device-agent" "$STAGE/usr/bin/workbench-device-agent"
install -D -m 644 "$DEB_DATA/workbench.desktop" "$STAGE/usr/share/applications/workbench.desktop"
install -D -m 644 "$DEB_DATA/workbench-mime.xml" "$STAGE/usr/share/mime/packages/workbench.xml"
install -D -m 644 "$DEB_DATA/workbench-device-agent.service" "$STAGE/usr/lib/systemd/user/workbench-device-agent.service"
install -D -m 644 "$DEB_DATA/copyright" "$STAGE/usr/share/doc/workbench/copyright"

# pip recorded that Workbench's own wheels came from files under build/; to the installed
# environment they are ordinary installed distributions.
for record in "$SITE"/workbench-*.dist-info "$SITE"/workbench_device_agent-*.dist-info "$SITE"/workbench_mnn-*.dist-info; do
    rm -f "$record/direct_url.json"
    sed -i '/\/direct_url\.json,/d' "$record/RECORD"
done

# The venv was made at $STAGE$PREFIX: its scripts' shebangs, activate scripts and pyvenv.cfg
# name that path. They must name $PREFIX, where dpkg puts them.
step "Moving the environment's paths from the staging root to $PREFIX"
grep -rlIF --null "$VENV" "$VENV" | xargs -0 -r sed -i "s|$VENV|$PREFIX|g"
if grep -rlIF "$BUILD" "$VENV" >/dev/null; then
    die "files of the environment still name the build folder: $(grep -rlIF "$BUILD" "$VENV" | head -5)"
fi
# Bytecode is compiled by postinst at its final place; none may name the staging path.
find "$VENV" -depth -name __pycache__ -type d -exec rm -rf {} +
find "$VENV" -name '*.py[co]' -delete

step "Writing DEBIAN/"
mkdir -p "$STAGE/DEBIAN"
INSTALLED_SIZE="$(du -sk --apparent-size "$STAGE" | cut -f1)"
sed -e "s|@VERSION@|$DEB_VERSION|" -e "s|@DEPENDS@|$DEPENDS|" -e "s|@RECOMMENDS@|$RECOMMENDS|" \
    -e "s|@INSTALLED_SIZE@|$INSTALLED_SIZE|" "$DEB_DATA/control.in" > "$STAGE/DEBIAN/control"
for script in postinst prerm postrm; do
    install -m 755 "$DEB_DATA/$script" "$STAGE/DEBIAN/$script"
done

step "dpkg-deb: $(basename "$DEB_FILE")"
t0=$(date +%s)
rm -f "$DEB_FILE"
# zstd: several times faster than xz on an environment this size, and read by dpkg on every
# system with Python 3.11 (Debian 12, Ubuntu 22.04 and later).
dpkg-deb --root-owner-group -Zzstd --build "$STAGE" "$DEB_FILE" >/dev/null
echo "    packed in $(( $(date +%s) - t0 )) s"
