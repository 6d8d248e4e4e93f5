from pathlib import Path

import pytest

from workbench.ui.commands import CommandError, CommandRegistry, fuzzy_score


def test_a_command_runs_with_its_arguments_and_returns_its_result():
    registry = CommandRegistry()
    registry.add("editor.insertText", "Type Text", lambda text: text.upper())
    assert registry.execute("editor.insertText", text="abc") == "ABC"


def test_unknown_disabled_and_misused_commands_raise_command_errors():
    registry = CommandRegistry()
    registry.add("file.save", "Save", lambda: None, enabled=lambda: False)
    registry.add("go.line", "Go to Line", lambda line: line)
    with pytest.raises(CommandError, match="no command"):
        registry.execute("file.nothing")
    with pytest.raises(CommandError, match="not available"):
        registry.execute("file.save")
    with pytest.raises(CommandError, match="argument"):
        registry.execute("go.line", column=3)


def test_registering_an_id_twice_is_refused():
    registry = CommandRegistry()
    registry.add("a", "A", lambda: None)
    with pytest.raises(CommandError):
        registry.add("a", "A again", lambda: None)


def test_explorer_commands_are_offered_only_for_paths_they_apply_to():
    registry = CommandRegistry()
    registry.add("model.quantize", "Quantize…", lambda path: path, context=("explorer",),
                  applies_to=lambda p: p.suffix == ".onnx")
    registry.add("file.reveal", "Reveal", lambda path: path, context=("explorer",))
    assert [c.id for c in registry.for_context("explorer", Path("m.onnx"))] == ["model.quantize", "file.reveal"]
    assert [c.id for c in registry.for_context("explorer", Path("train.py"))] == ["file.reveal"]


def test_fuzzy_score_prefers_word_starts_and_rejects_missing_letters():
    assert fuzzy_score("xyz", "File: Save") is None
    assert fuzzy_score("save", "File: Save") > fuzzy_score("save", "View: Show Available Environments")
    assert fuzzy_score("fs", "File: Save") is not None


def test_a_query_that_starts_a_word_ranks_above_the_same_letters_inside_a_word():
    assert fuzzy_score("tag", "Git: Create Tag…") > fuzzy_score("tag", "Git: Stage All Changes")
    assert fuzzy_score("save", "File: Save") > fuzzy_score("save", "View: Unsaved Changes")
    assert fuzzy_score("gtl", "Go to Line…") is not None  # the first letters of words match


def test_a_qt_method_can_be_a_command():
    from PySide6.QtCore import QObject

    holder = QObject()
    registry = CommandRegistry()
    registry.add("object.name", "Name", holder.objectName)
    assert registry.execute("object.name") == ""


def test_a_type_error_inside_a_command_is_not_called_misuse():
    registry = CommandRegistry()
    registry.add("broken", "Broken", lambda: len(5))
    with pytest.raises(TypeError):
        registry.execute("broken")
