"""The qtconsole parts of a console: the IPython widget and its kernel client.

qtconsole (and through it jupyter_client, zmq and pygments) costs about a second to import, so it
is imported inside these functions, never at module top: first by ``load_frontend`` on a worker
thread when a console starts, so the window goes on while it loads, and then, already in memory,
by the others on the GUI thread.
"""

from __future__ import annotations

import functools


def load_frontend() -> bool:
    """Import qtconsole's widget and client (the slow part; meant for a worker thread)."""
    import qtconsole.client  # noqa: F401
    import qtconsole.rich_jupyter_widget  # noqa: F401

    return True


@functools.cache
def console_widget_class() -> type:
    """``ConsoleWidget``: qtconsole's rich IPython widget, with interrupt and restart handed to
    the console tab (it owns the kernel) and the output kept across a restart."""
    from PySide6.QtCore import Signal
    from qtconsole.rich_jupyter_widget import RichJupyterWidget

    from workbench.qt.theme import editor_font

    class ConsoleWidget(RichJupyterWidget):
        sig_prompt_shown = Signal()
        """A prompt is shown: the console accepts input."""

        def __init__(self, parent=None):
            super().__init__(parent)
            # The tab starts, interrupts and restarts the kernel (off the GUI thread, without
            # the widget's confirmation dialog); the widget only asks.
            self.custom_interrupt = True
            self.custom_restart = True
            self.keep_output_on_start = False
            self.font = editor_font()
            self.follow_theme()

        def follow_theme(self) -> None:
            """Take the current theme's colours and Pygments style, now and whenever it changes."""
            from workbench.qt import theme

            self.apply_theme(theme.current_theme())
            theme.theme_changes().sig_theme_changed.connect(self.apply_theme)

        def apply_theme(self, name: str) -> None:
            """Colour the console as the editor is in theme ``name`` ("light" or "dark")."""
            from workbench.qt import theme

            self.style_sheet = console_style_sheet(name)
            self.syntax_style = theme.PYGMENTS_STYLES[name]
            if self._highlighter is not None:
                self._highlighter.rehighlight()  # the input typed so far, in the new colours

        def is_busy(self) -> bool:
            """An execution is running (its prompt has not come back)."""
            return bool(self._executing)

        def has_prompt(self) -> bool:
            """A prompt is shown and nothing runs: typed input would go to the kernel."""
            return not self._executing and self._prompt_pos is not None and not self._control.isReadOnly()

        def reset(self, clear=False):
            # After a restart the new kernel's prompt comes under the old output, as in Spyder,
            # instead of wiping what the user was looking at.
            if self.keep_output_on_start:
                self.keep_output_on_start = False
                clear = False
            super().reset(clear=clear)

        def _prompt_started_hook(self):
            super()._prompt_started_hook()
            self.sig_prompt_shown.emit()

        def append_notice(self, text: str) -> None:
            """A line of the console's own (a restart) between the kernel's outputs."""
            self._append_html(f'<br><span style="color:#777">{text}</span><br>', before_prompt=True)

    return ConsoleWidget


def console_style_sheet(name: str) -> str:
    """qtconsole's style sheet (text, background, selection, prompts) in the colours of the
    editor's theme ``name``, so the console looks like the editor beside it."""
    from qtconsole import styles

    from workbench.qt import theme

    dark = name == theme.DARK
    template = styles.default_dark_style_template if dark else styles.default_light_style_template
    sheet = template % dict(bgcolor=theme.colour("BACKGROUND", name), fgcolor=theme.colour("FOREGROUND", name),
                            select="#264f78" if dark else "#add6ff")
    # qtconsole's dark prompts are lime and red; these are the theme's own.
    in_prompt, out_prompt = ("#4ec9b0", "#ce9178") if dark else ("#0000ff", "#a31515")
    return (sheet + f".in-prompt, .in-prompt-number {{ color: {in_prompt}; }}\n"
                    f".out-prompt, .out-prompt-number {{ color: {out_prompt}; }}\n"
                    f".error {{ color: {theme.colour('ERROR_TEXT', name)}; }}\n")


def make_client(connection_info: dict):
    """A Qt kernel client for the kernel at ``connection_info`` (channels not started)."""
    from qtconsole.client import QtKernelClient

    client = QtKernelClient()
    client.load_connection_info(connection_info)
    return client
