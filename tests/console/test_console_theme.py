"""The console takes the theme's colours and Pygments style, from the start and live (its widget
needs no kernel to be drawn)."""

from __future__ import annotations

import pytest

from workbench.qt import theme

ONE_DARK_KEYWORD = "#c678dd"
VS_KEYWORD = "#0000ff"


@pytest.fixture
def console(qtbot):
    """A shown console widget with a prompt and typed input, as a kernel's first prompt leaves it;
    the theme goes back to light afterwards."""
    from workbench.console.widgets.frontend import console_widget_class

    def make():
        widget = console_widget_class()()
        qtbot.addWidget(widget)
        widget.resize(500, 300)
        widget.show()
        widget._show_interpreter_prompt(1)
        widget._prompt_started()
        widget.input_buffer = "def f(): pass"
        return widget

    yield make
    theme.apply_theme("light")


def _input_colours(widget) -> set[str]:
    block = widget._control.document().lastBlock()
    return {r.format.foreground().color().name() for r in block.layout().formats()}


def _background(widget) -> str:
    return widget._control.viewport().grab().toImage().pixelColor(4, 4).name()


def test_switching_to_dark_darkens_the_console_and_recolours_its_input_and_back(console):
    widget = console()
    assert widget.syntax_style == "vs" and VS_KEYWORD in _input_colours(widget)
    assert _background(widget) == theme.colour("BACKGROUND", "light")
    theme.apply_theme("dark")
    assert widget.syntax_style == theme.PYGMENTS_STYLES["dark"] == "one-dark"
    assert theme.colour("BACKGROUND", "dark") in widget.style_sheet
    assert ONE_DARK_KEYWORD in _input_colours(widget)  # "def" typed before the switch
    assert _background(widget) == theme.colour("BACKGROUND", "dark")
    theme.apply_theme("light")
    assert widget.syntax_style == "vs" and VS_KEYWORD in _input_colours(widget)
    assert _background(widget) == theme.colour("BACKGROUND", "light")


def test_a_console_made_in_the_dark_theme_starts_dark(console):
    theme.apply_theme("dark")
    widget = console()
    assert widget.syntax_style == "one-dark" and ONE_DARK_KEYWORD in _input_colours(widget)
    assert _background(widget) == theme.colour("BACKGROUND", "dark")
