#!/usr/bin/env bash
# Sets Workbench up and starts it. Without a display, says so and runs the headless demo instead:
# it creates the digits project, trains it for two epochs through `workbench train`, converts,
# quantizes and compares the model, verifies the int8 model on this computer's device agent,
# renders the welcome and project windows (with the run's curves) to PNG files and prints where
# they are.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    exec .venv/bin/workbench --foreground "$@"
fi

cat <<'MSG'
There is no display on this machine, so Workbench cannot show a window here.
  - To use the app on a virtual display:   xvfb-run -a ./scripts/run.sh
  - To render a window into a picture:     .venv/bin/workbench screenshot [PROJECT] -o window.png
Running the headless demo instead.
MSG
demo=${WORKBENCH_DEMO_DIR:-$(mktemp -d /tmp/workbench-demo.XXXXXX)}
export QT_QPA_PLATFORM=offscreen
.venv/bin/workbench new --template digits "$demo/digits"
.venv/bin/workbench train "$demo/digits" --set num_epochs=2
# The completed run registered its best weights as model version 0000 (docs/versions.md).
.venv/bin/workbench registry list "$demo/digits"
# The trained model through the model tools: ONNX, int8, and the two side by side.
model=$(ls "$demo"/digits/runs/*/outputs/model.pt | tail -n 1)
.venv/bin/workbench model convert "$model"
.venv/bin/workbench model quantize "${model%.pt}.onnx" --no-layer-report
.venv/bin/workbench model compare "${model%.pt}.onnx" "${model%.pt}.int8.onnx" --markdown "$demo/compare.md"
# This computer as a device: serve-local starts its agent (and pairs with it: no code to type),
# the int8 model goes there and is verified against this computer on the project's test split.
# Without an OS keyring the device keys go to a file only the user reads, said once on stderr.
int8="${model%.pt}.int8.onnx"
local_agent=$(.venv/bin/workbench device serve-local --json)
read -r started address < <(printf '%s' "$local_agent" | .venv/bin/python -c \
    'import json, sys; agent = json.load(sys.stdin); print(agent["started"], agent["address"])')
stop_local_agent() { .venv/bin/workbench device serve-local --stop; }
if [ "$started" = True ]; then
    echo "Started this computer's device agent at $address for the demo (paired with it)"
    trap stop_local_agent EXIT  # an agent the demo started does not outlive it, even on failure
else
    echo "This computer's device agent runs already at $address: the demo uses it and leaves it running"
fi
.venv/bin/workbench device push local "$int8"
.venv/bin/workbench device verify local "$int8" --project "$demo/digits" | tee "$demo/verify.txt"
if [ "$started" = True ]; then
    trap - EXIT
    stop_local_agent
fi
.venv/bin/workbench screenshot -o "$demo/welcome.png"
.venv/bin/workbench screenshot "$demo/digits" -o "$demo/digits-window.png"
echo "Demo project: $demo/digits"
echo "Pictures:     $demo/welcome.png  $demo/digits-window.png"
echo "Comparison:   $demo/compare.md"
echo "On a device:  $(head -n 1 "$demo/verify.txt")"
echo "              (the whole verification: $demo/verify.txt)"
