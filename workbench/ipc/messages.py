"""Every message name on the hub ⇄ window channel, in one place. docs/ipc.md describes each.

Requests (have an id, get an answer) are named ``<receiver>.<verb>``; notifications (no id, no
answer) are events. A handler object answers a message in its ``on_<name>`` method, the dots
turned into underscores: ``hub.open_project`` → ``on_hub_open_project``.
"""

PROTOCOL_VERSION = 1
APP_NAME = "workbench"

# Sent to the hub.
HUB_HELLO = "hub.hello"  # -> {app, protocol, version, pid}
HUB_PING = "hub.ping"  # -> {}
HUB_OPEN_PROJECT = "hub.open_project"  # {path, file?, line?} -> {window_id, pid, already_open}
HUB_OPEN_TOOL = "hub.open_tool"  # {tool, values, project?, run?} -> {window_id, pid}
HUB_SHOW_WELCOME = "hub.show_welcome"  # -> {}
HUB_LIST_WINDOWS = "hub.list_windows"  # {all?} -> {windows: [entry...]}
HUB_REOPEN_WINDOW = "hub.reopen_window"  # {window_id} -> {window_id, pid}
HUB_WINDOW_COMMAND = "hub.window_command"  # {window_id, command, args} -> {result}
HUB_DESCRIBE_WINDOW = "hub.describe_window"  # {window_id} -> what window.describe answers
HUB_DESCRIBE_WELCOME = "hub.describe_welcome"  # -> {visible, notice, windows}
HUB_QUIT_ALL = "hub.quit_all"  # -> {quit, kept_open?}: close every window as its user would, then end
WINDOW_REGISTER = "window.register"  # {window_id, pid, kind, project, state} -> {hub_pid}

# Notifications sent to the hub.
WINDOW_STATE_CHANGED = "window.state_changed"  # {window_id, state, title?}
WINDOW_CLOSING = "window.closing"  # {window_id}: a clean close, not a crash
BROADCAST = "broadcast"  # {event, data}: the hub passes it on to every other window

# Sent by the hub to a window.
WINDOW_FOCUS = "window.focus"  # -> {}
WINDOW_OPEN_PROJECT = "window.open_project"  # to a spare window: {path, file?, line?} -> {}
WINDOW_OPEN_FILE = "window.open_file"  # {path, line?} -> {}
WINDOW_RUN_COMMAND = "window.run_command"  # {command, args} -> {result}
WINDOW_DESCRIBE = "window.describe"  # -> {pid, kind, project, open_files, modified, modules}
WINDOW_QUIT = "window.quit"  # {force?} -> {closed}: close as the user would (force: without asking)

# Notification from the hub to windows.
EVENT = "event"  # {event, data, sender}: a broadcast passed on

# Events carried by BROADCAST / EVENT.
EVENT_MODEL_PRODUCED = "model.produced"  # {path, project?, tool?}
EVENT_WINDOWS_CHANGED = "windows.changed"  # {}

# Window kinds and states as the registry reports them.
KIND_PROJECT = "project"
KIND_TOOL = "tool"
KIND_SPARE = "spare"

STATE_STARTING = "starting"
STATE_READY = "ready"
STATE_CRASHED = "crashed"
STATE_UNREACHABLE = "unreachable"


def handler_name(method: str) -> str:
    return "on_" + method.replace(".", "_")
