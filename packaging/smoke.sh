#!/usr/bin/env bash
# Installs dist/workbench_<version>_amd64.deb on this machine and uses it as a new user would:
# version, a digits project trained one epoch by the installed environment, its model converted,
# quantized and verified on the installed device agent, a screenshot, the app started from its
# menu entry's Exec line under Xvfb; then removes and purges the package and checks nothing of
# it is left. Prints each step, then PASS, or FAIL and the step that failed.
#
# Usage: sudo bash packaging/smoke.sh [--upgrade-from OLD_DEB] [DEB]
#   DEB            the package to test (default: the newest dist/workbench_*_amd64.deb)
#   --upgrade-from first install OLD_DEB, then DEB over it: an upgrade in place
# The user's data goes to a temporary HOME; the machine's own Workbench data is not touched.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OLD_DEB=""
if [ "${1:-}" = --upgrade-from ]; then
    [ -f "${2:-}" ] || { echo "FAIL: --upgrade-from needs an existing .deb, not '${2:-}'" >&2; exit 1; }
    OLD_DEB="$(readlink -f "$2")"; shift 2
fi
case "${1:-}" in -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
DEB="${1:-$(ls -t "$REPO"/dist/workbench_*_amd64.deb 2>/dev/null | head -n 1)}"
CURRENT_STEP="start"
WORK=""
XVFB_PID=""
AGENT_STARTED=0

step() { CURRENT_STEP="$*"; echo; echo "==> $*"; }
fail() { echo "FAIL: $CURRENT_STEP: $*" >&2; exit 1; }

[ -n "$DEB" ] && [ -f "$DEB" ] || { echo "FAIL: no .deb: build one with bash packaging/build.sh --only deb" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "FAIL: installing a package needs root: sudo bash packaging/smoke.sh" >&2; exit 1; }
DEB="$(readlink -f "$DEB")"
VERSION="$(dpkg-deb -f "$DEB" Version)"

# The long-lived processes this script starts (the agent, the app from its menu entry: both
# detach, so they are not our children) carry this marker in their environment; they, and only
# they, are ended at the end. The script itself does not carry it.
WORK="$(mktemp -d /tmp/workbench-smoke.XXXXXX)"
MARKER="WORKBENCH_SMOKE_MARKER=$WORK"
export HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" XDG_DATA_HOME="$WORK/home/.local/share" \
    XDG_CACHE_HOME="$WORK/home/.cache" XDG_STATE_HOME="$WORK/home/.local/state" \
    XDG_RUNTIME_DIR="$WORK/runtime" WORKBENCH_RUNTIME_DIR="$WORK/runtime/workbench"
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_STATE_HOME"
mkdir -m 700 -p "$XDG_RUNTIME_DIR"
unset DISPLAY WAYLAND_DISPLAY
cd "$WORK"

processes_we_started() {
    local pid
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
        { tr '\0' '\n' < "/proc/$pid/environ"; } 2>/dev/null | grep -qxF "$MARKER" && echo "$pid"
    done
    return 0
}

cleanup() {
    local status=$?
    if [ "$AGENT_STARTED" = 1 ] && [ -x /usr/bin/workbench ]; then
        /usr/bin/workbench device serve-local --stop >/dev/null 2>&1 || true
    fi
    local pids
    pids="$(processes_we_started)"
    if [ -n "$pids" ]; then
        kill -TERM $pids 2>/dev/null || true
        sleep 3
        pids="$(processes_we_started)"
        [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
    fi
    [ -z "$XVFB_PID" ] || kill "$XVFB_PID" 2>/dev/null || true
    if [ $status = 0 ]; then
        rm -rf "$WORK"
        echo; echo "PASS"
    else
        echo; echo "FAIL at step: $CURRENT_STEP (files kept in $WORK)"
    fi
}
trap cleanup EXIT

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 "$1" > "$WORK/apt.log" 2>&1 \
        || { tail -20 "$WORK/apt.log"; fail "apt-get install $1 failed (log above)"; }
}

if [ -n "$OLD_DEB" ]; then
    step "Install the older $(basename "$OLD_DEB") first, to upgrade it in place"
    apt_install "$OLD_DEB"
    /usr/bin/workbench --version
    /opt/workbench/bin/python -c 'import workbench' # bytecode made by use, which the upgrade must not leave stale
    dpkg-query -L workbench | sort > "$WORK/old-files.txt"
fi

step "Install $(basename "$DEB") (apt brings its dependencies)"
dpkg -s workbench >/dev/null 2>&1 && echo "    (replacing the installed workbench $(dpkg-query -W -f '${Version}' workbench))"
t0=$(date +%s)
apt_install "$DEB"
[ "$(dpkg-query -W -f '${Status} ${Version}' workbench)" = "install ok installed $VERSION" ] \
    || fail "dpkg does not list workbench $VERSION as installed"
echo "    installed in $(( $(date +%s) - t0 )) s"
if [ -n "$OLD_DEB" ]; then
    dpkg-query -L workbench | sort > "$WORK/new-files.txt"
    stale="$(comm -23 "$WORK/old-files.txt" "$WORK/new-files.txt" | while read -r f; do if [ -e "$f" ] && [ ! -d "$f" ]; then echo "$f"; fi; done)"
    [ -z "$stale" ] || fail "files of the old version the new one lacks are left: $(echo "$stale" | head -5)"
    echo "    upgraded in place from $(dpkg-deb -f "$OLD_DEB" Version): $(comm -23 "$WORK/old-files.txt" "$WORK/new-files.txt" | wc -l) paths of the old version gone, $(comm -13 "$WORK/old-files.txt" "$WORK/new-files.txt" | wc -l) new"
fi

step "/usr/bin/workbench --version"
out="$(/usr/bin/workbench --version)"; echo "    $out"
[[ "$out" == *"${VERSION//\~/}"* ]] || [[ "$out" == *"$VERSION"* ]] || fail "expected version $VERSION in '$out'"
[ "$(readlink -f /opt/workbench/bin/python)" = "$(readlink -f /usr/bin/python3.11)" ] \
    || fail "/opt/workbench/bin/python is not the system's python3.11"
grep -rlIF "/build/deb/root" /opt/workbench/bin /opt/workbench/pyvenv.cfg && fail "files of /opt/workbench name the build's staging root"
head -n 1 /opt/workbench/bin/workbench | grep -qx '#!/opt/workbench/bin/python' || fail "the workbench script's shebang is not /opt/workbench/bin/python"
for type in application/x-onnx text/x-workbench-hparams; do
    [ -f "/usr/share/mime/$type.xml" ] || fail "the MIME database does not know $type (update-mime-database in postinst)"
done
for size in 16x16 24x24 32x32 48x48 64x64 128x128 256x256 scalable; do
    ls /usr/share/icons/hicolor/$size/apps/workbench.* >/dev/null 2>&1 || fail "no $size icon in the hicolor theme"
done

step "workbench new --template digits"
export QT_QPA_PLATFORM=offscreen
/usr/bin/workbench new --template digits "$WORK/digits"
[ -f "$WORK/digits/workbench.toml" ] || fail "no workbench.toml in the new project"

step "workbench train (one epoch, by /opt/workbench's Python)"
t0=$(date +%s)
/usr/bin/workbench train "$WORK/digits" --set num_epochs=1
echo "    trained in $(( $(date +%s) - t0 )) s"
model="$(ls "$WORK"/digits/runs/*/outputs/model.pt 2>/dev/null | tail -n 1)"
[ -n "$model" ] || fail "the run wrote no outputs/model.pt"
grep -rqs "/opt/workbench/bin/python" "$(dirname "$(dirname "$model")")" || fail "the run did not record /opt/workbench/bin/python as its interpreter"

step "workbench model convert, then model quantize"
/usr/bin/workbench model convert "$model"
onnx="${model%.pt}.onnx"
[ -f "$onnx" ] || fail "convert wrote no $onnx"
/usr/bin/workbench model quantize "$onnx" --no-layer-report
int8="${model%.pt}.int8.onnx"
[ -f "$int8" ] || fail "quantize wrote no $int8"

step "Start the installed device agent (workbench device serve-local) and verify the int8 model on it"
agent_json="$(env "$MARKER" /usr/bin/workbench device serve-local --json)"
AGENT_STARTED=1
echo "    $agent_json"
agent_pids="$(processes_we_started)"
agent_ok=0
for pid in $agent_pids; do
    cmd="$({ tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null || true)"
    if [[ "$cmd" == *workbench_device* ]]; then
        echo "    agent pid $pid: $cmd"
        [[ "$cmd" == /opt/workbench/bin/python* ]] && agent_ok=1
    fi
done
[ "$agent_ok" = 1 ] || fail "no device agent runs from /opt/workbench/bin/python"
/usr/bin/workbench device verify local "$int8" --project "$WORK/digits" --runs 10
/usr/bin/workbench device serve-local --stop
AGENT_STARTED=0

step "/usr/bin/workbench-device-agent --help (the command the systemd user unit runs)"
/usr/bin/workbench-device-agent --help | head -n 1
unit=/usr/lib/systemd/user/workbench-device-agent.service
grep -q '^ExecStart=/usr/bin/workbench-device-agent' "$unit" || fail "$unit does not start /usr/bin/workbench-device-agent"
if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify --user "$unit" 2>&1 | grep -v -e 'Failed to .*bus' -e 'XDG_RUNTIME_DIR' || true
fi

step "workbench screenshot (the welcome window and the project window)"
/usr/bin/workbench screenshot -o "$WORK/welcome.png"
/usr/bin/workbench screenshot "$WORK/digits" -o "$WORK/digits-window.png"
for png in "$WORK/welcome.png" "$WORK/digits-window.png"; do
    [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$png is not a PNG"
done
cp "$WORK/welcome.png" "$WORK/digits-window.png" "$REPO/build/" 2>/dev/null || true

step "Start Workbench from its menu entry's Exec line under Xvfb"
desktop=/usr/share/applications/workbench.desktop
exec_line="$(sed -n 's/^Exec=//p' "$desktop" | head -n 1)"
[ -n "$exec_line" ] || fail "$desktop has no Exec line"
command -v desktop-file-validate >/dev/null && { desktop-file-validate "$desktop" || fail "$desktop is not a valid desktop entry"; }
# The field codes (%F: the files to open) expand to nothing when the menu starts it with none.
read -ra launch <<< "$(echo "$exec_line" | sed 's/ %[fFuUdDnNickvm]//g')"
display=""
for n in $(seq 120 199); do
    [ -e "/tmp/.X$n-lock" ] || [ -e "/tmp/.X11-unix/X$n" ] || { display=":$n"; break; }
done
[ -n "$display" ] || fail "no free X display number between :120 and :199"
Xvfb "$display" -screen 0 1600x1000x24 -nolisten tcp > "$WORK/xvfb.log" 2>&1 &
XVFB_PID=$!
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X${display#:}" ] && break; sleep 0.2; done
unset QT_QPA_PLATFORM
export DISPLAY="$display"
echo "    $desktop: Exec=$exec_line  ->  ${launch[*]} on DISPLAY=$display"
(cd "$HOME" && env "$MARKER" PATH="/usr/bin:/bin" "${launch[@]}")
window_seen=0
for _ in $(seq 60); do
    if xwininfo -root -tree 2>/dev/null | grep -q 'Workbench"'; then window_seen=1; break; fi
    sleep 1
done
xwininfo -root -tree | grep 'Workbench"' | head -n 3 || true
[ "$window_seen" = 1 ] || fail "no Workbench window appeared on $display within 60 s (hub log: $WORKBENCH_RUNTIME_DIR/hub.log)"
/usr/bin/workbench windows --all || fail "the hub started from the menu entry does not answer"
# A file manager opening the project's .hparams file runs the Exec line with %F as that file:
# the hub started from the menu opens the project in a window process of its own.
read -ra open_file <<< "$(echo "$exec_line" | sed "s| %F| $WORK/digits/hparams/digits.hparams|")"
echo "    opening a .hparams file as a file manager does: ${open_file[*]}"
(cd "$HOME" && env "$MARKER" PATH="/usr/bin:/bin" "${open_file[@]}") || fail "the Exec line did not open $WORK/digits/hparams/digits.hparams"
project_listed=0
for _ in $(seq 60); do
    if /usr/bin/workbench windows --json 2>/dev/null | grep -qF "$WORK/digits"; then project_listed=1; break; fi
    sleep 1
done
/usr/bin/workbench windows
[ "$project_listed" = 1 ] || fail "the hub does not list a window of $WORK/digits within 60 s"
for _ in $(seq 30); do xwininfo -root -tree 2>/dev/null | grep -q 'digits.*Workbench"' && break; sleep 1; done
sleep 3  # the window's first paint, for the picture
hub_exe="$(for pid in $(processes_we_started); do { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null; echo; done | grep -m1 'hub_process' || true)"
[[ "$hub_exe" == /opt/workbench/bin/python* ]] || fail "no hub process of /opt/workbench runs (found: '$hub_exe')"
echo "    process: $hub_exe"
if command -v import >/dev/null; then
    import -display "$display" -window root "$WORK/desktop.png" && cp "$WORK/desktop.png" "$REPO/build/" 2>/dev/null || true
fi
pids="$(processes_we_started)"
[ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
for _ in $(seq 30); do [ -z "$(processes_we_started)" ] && break; sleep 0.5; done
[ -z "$(processes_we_started)" ] || fail "Workbench's processes did not end on SIGTERM: $(processes_we_started)"
kill "$XVFB_PID"; wait "$XVFB_PID" 2>/dev/null || true; XVFB_PID=""
unset DISPLAY

step "dpkg -r workbench, then dpkg -P workbench: nothing of the package is left"
dpkg-query -L workbench > "$WORK/package-files.txt"
dpkg -r workbench
# Removal alone (no purge) leaves nothing under /opt/workbench: no bytecode, no empty folders.
[ ! -e /opt/workbench ] || { find /opt/workbench | head -20; fail "dpkg -r left /opt/workbench (above)"; }
dpkg -P workbench
dpkg -s workbench >/dev/null 2>&1 && fail "dpkg still knows workbench"
[ ! -e /opt/workbench ] || { find /opt/workbench | head -20; fail "/opt/workbench is still there (above)"; }
left=""
while IFS= read -r path; do
    case "$path" in /usr/*|/opt/*) ;; *) continue ;; esac
    # Folders the package shared with others (/usr/bin, the icon theme's folders) stay.
    if [ -e "$path" ] && [ ! -d "$path" ] || [ -L "$path" ]; then left="$left $path"; fi
done < "$WORK/package-files.txt"
[ -z "$left" ] || fail "files of the package are left:$left"
for type in application/x-onnx text/x-workbench-hparams; do
    [ ! -e "/usr/share/mime/$type.xml" ] || fail "the MIME database still holds $type (update-mime-database in postrm)"
done
echo "    $(wc -l < "$WORK/package-files.txt") paths of the package, none left; /opt/workbench gone"
