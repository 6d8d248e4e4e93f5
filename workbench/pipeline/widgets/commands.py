"""The Pipeline's commands in a project window: Models ▸ Pipeline shows the panel, and Start,
Stop and Resume are palette commands. Each takes keyword arguments, so a script or a test runs
it without a menu (``commands.execute("pipeline.resume", version="0003")``); without them it acts
on the selected iteration."""

from __future__ import annotations

CATEGORY = "Pipeline"


def register_commands(window, panel, show) -> list[str]:
    """Declare the commands of ``panel`` in ``window``; ``show()`` brings the panel forward."""
    add = window.commands.add

    def shown(run):
        def run_shown(**options):
            show()
            return run(**options)
        return run_shown

    def idle() -> bool:
        return panel.running_iteration() is None

    add("pipeline.show", "Pipeline", lambda: (show(), panel.refresh()), category="Models", menu="Models")
    add("pipeline.start", "Start Iteration", shown(panel.start), category=CATEGORY, enabled=idle)
    add("pipeline.stop", "Stop Iteration", shown(lambda version=None: panel.stop(version)), category=CATEGORY,
        enabled=lambda: not idle())
    add("pipeline.resume", "Resume Iteration", shown(lambda version=None: panel.resume(version)),
        category=CATEGORY, enabled=idle)
    return ["pipeline.show", "pipeline.start", "pipeline.stop", "pipeline.resume"]
