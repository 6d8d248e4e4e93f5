"""Entry point of the hub process (``python -m workbench.app.hub_process [--no-welcome]``).

The welcome window is put on screen first and the hub's own machinery (IPC server, registry,
process launcher) is loaded just after it has painted: a person sees the window as soon as a
bare Qt program could show one, and the hub answers a few milliseconds later.
"""

from __future__ import annotations

import sys

from workbench.ipc.endpoint import hub_lock
from workbench.ipc.errors import IpcError

# If the first paint never comes (a window manager that maps late), start the hub anyway.
START_ANYWAY_MS = 1000


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "-h" in args or "--help" in args:
        print("usage: python -m workbench.app.hub_process [--no-welcome]")
        return 0
    show_welcome = "--no-welcome" not in args
    try:
        lock = hub_lock()
        if not lock.try_acquire():
            # Another hub won the race; whoever started this one talks to that one.
            return 0
    except IpcError as exc:
        print(f"workbench: {exc}", file=sys.stderr)
        return 1

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.qt.paint import after_first_paint, mark_first_paint

    app = QApplication(sys.argv[:1])
    app.setApplicationName("Workbench")
    app.setQuitOnLastWindowClosed(False)
    started: list = []

    def start_hub() -> None:
        if started:
            return
        import logging

        from workbench.app.hub import Hub

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        hub = Hub(welcome=welcome)
        started.append(hub)
        from workbench.ui.window_icons import set_application_icon

        set_application_icon()  # after the first paint: Qt's SVG plugin loads with it
        from workbench.app.termination import TerminationWatch

        # SIGTERM ends the hub as a quit does: its spare window ends with it.
        TerminationWatch(hub.shutdown, hub)
        try:
            hub.start()
        except IpcError as exc:
            print(f"workbench: {exc}", file=sys.stderr)
            app.exit(1)

    welcome = None
    if show_welcome:
        from workbench.project.recent import RecentProjects, user_config_dir
        from workbench.ui.first_paint_settings import read_first_paint_settings
        from workbench.ui.welcome_window import WelcomeWindow

        # The theme machinery (settings, palette, style: about 100 ms) waits for the first paint
        # unless the user chose the dark theme outright: the light one is the platform's own look.
        dark = read_first_paint_settings(user_config_dir()).theme == "dark"
        if dark:
            _follow_theme()
        welcome = WelcomeWindow(RecentProjects(user_config_dir()))
        # Qt runs the newest event filter first: the paint mark is taken before the hub loads.
        after_first_paint(welcome, start_hub)
        if not dark:
            after_first_paint(welcome, _follow_theme)
        mark_first_paint(welcome, "welcome")
        welcome.show()
        QTimer.singleShot(START_ANYWAY_MS, start_hub)
    else:
        start_hub()
    code = app.exec()
    lock.release()
    return code

def _follow_theme() -> None:
    from PySide6.QtWidgets import QApplication

    from workbench.ui.appearance import follow_settings_files, follow_theme_setting, window_settings

    settings = window_settings()
    # A theme chosen in any window (or settings.toml edited by hand) reaches the welcome window.
    follow_settings_files(settings, QApplication.instance())
    follow_theme_setting(settings)

if __name__ == "__main__":
    sys.exit(main())

