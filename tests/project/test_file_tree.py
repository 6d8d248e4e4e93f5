from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from workbench.project import create_from_template
from workbench.project.widgets import ProjectTree
from workbench.ui.commands import CommandRegistry


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    (root / ".git" / "objects").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"")
    (root / ".workbench").mkdir()
    (root / "models").mkdir()
    (root / "models" / "net.onnx").write_bytes(b"onnx")
    (root / "models" / "__pycache__").mkdir()
    (root / "train.py").write_text("print('hi')\n")
    (root / "Zeta.md").write_text("")
    (root / ".gitignore").write_text("runs/\n")
    return root


def make_tree(qtbot, root: Path, commands=None) -> ProjectTree:
    tree = ProjectTree(root, commands)
    qtbot.addWidget(tree)
    # A real message box would wait for a click that never comes; tests read tree.errors.
    tree.errors = []
    tree.show_error = tree.errors.append
    tree.resize(320, 480)
    tree.show()
    return tree


def wait_for_names(qtbot, tree: ProjectTree, expected: list[str], folder=None) -> None:
    qtbot.waitUntil(lambda: tree.child_names(folder) == expected)


def menu_names(menu) -> list[str]:
    return [a.objectName() for a in menu.actions() if not a.isSeparator()]


def menu_action(menu, name: str):
    [action] = [a for a in menu.actions() if a.objectName() == name]
    return action


def test_tree_hides_git_pycache_and_workbench_and_lists_folders_first(qtbot, project):
    tree = make_tree(qtbot, project)
    wait_for_names(qtbot, tree, ["models", ".gitignore", "train.py", "Zeta.md"])


def test_tree_hides_pycache_in_sub_folders_too(qtbot, project):
    tree = make_tree(qtbot, project)
    wait_for_names(qtbot, tree, ["models", ".gitignore", "train.py", "Zeta.md"])
    tree.expand(tree.index_of("models"))
    wait_for_names(qtbot, tree, ["net.onnx"], folder="models")


def test_tree_shows_only_the_name_column(qtbot, project):
    tree = make_tree(qtbot, project)
    assert tree.isHeaderHidden()
    assert not tree.isColumnHidden(0)
    assert all(tree.isColumnHidden(c) for c in range(1, tree.model().columnCount()))


def test_explorer_commands_appear_only_for_paths_they_apply_to(qtbot, project):
    registry = CommandRegistry()
    ran = []
    registry.add("modeltools.quantize", "Quantize…", lambda path: ran.append(path),
                 context=("explorer",), applies_to=lambda p: p.suffix == ".onnx")
    registry.add("git.history", "Show History", lambda path: None, context=("explorer",))
    registry.add("editor.find", "Find", lambda: None)  # not an explorer command
    tree = make_tree(qtbot, project, registry)

    onnx_menu = tree.context_menu_for(project / "models" / "net.onnx")
    py_menu = tree.context_menu_for(project / "train.py")

    assert menu_names(onnx_menu) == ["new_file", "new_folder", "rename", "delete", "reveal",
                                     "copy_path", "modeltools.quantize", "git.history"]
    assert "modeltools.quantize" not in menu_names(py_menu)
    assert "git.history" in menu_names(py_menu)
    assert "editor.find" not in menu_names(py_menu)

    menu_action(onnx_menu, "modeltools.quantize").trigger()
    assert ran == [project / "models" / "net.onnx"]
    assert tree.errors == []


def test_menu_on_the_empty_area_offers_no_rename_or_delete_of_the_project(qtbot, project):
    tree = make_tree(qtbot, project)
    names = menu_names(tree.context_menu_for(None))
    assert names[:2] == ["new_file", "new_folder"]
    assert "rename" not in names and "delete" not in names


def test_menu_shows_the_rename_and_delete_shortcuts(qtbot, project):
    tree = make_tree(qtbot, project)
    actions = {a.objectName(): a for a in tree.context_menu_for(project / "train.py").actions()}
    assert actions["rename"].shortcut().toString() == "F2"
    assert actions["delete"].shortcut().toString() == "Del"


def test_a_failing_explorer_command_is_shown_not_raised(qtbot, project):
    registry = CommandRegistry()

    def broken(path):
        raise RuntimeError("converter crashed")

    registry.add("x.broken", "Broken", broken, context=("explorer",))
    tree = make_tree(qtbot, project, registry)
    tree.run_command("x.broken", project / "train.py")
    assert tree.errors == ["converter crashed"]


def test_renaming_through_the_tree_with_a_replaced_dialog(qtbot, project):
    tree = make_tree(qtbot, project)
    wait_for_names(qtbot, tree, ["models", ".gitignore", "train.py", "Zeta.md"])
    tree.ask_name = lambda title, label, initial="": "fit.py"

    with qtbot.waitSignal(tree.sig_path_renamed) as renamed:
        menu_action(tree.context_menu_for(project / "train.py"), "rename").trigger()

    assert renamed.args == [project / "train.py", project / "fit.py"]
    assert (project / "fit.py").read_text() == "print('hi')\n"
    assert not (project / "train.py").exists()
    wait_for_names(qtbot, tree, ["models", ".gitignore", "fit.py", "Zeta.md"])
    assert tree.selected_path() == project / "fit.py"


def test_f2_renames_the_selected_file(qtbot, project):
    tree = make_tree(qtbot, project)
    wait_for_names(qtbot, tree, ["models", ".gitignore", "train.py", "Zeta.md"])
    tree.ask_name = lambda title, label, initial="": initial.replace("train", "fit")
    tree.select_path(project / "train.py")
    tree.setFocus()
    qtbot.keyClick(tree, Qt.Key.Key_F2)
    assert (project / "fit.py").is_file()


def test_rename_errors_are_shown_and_nothing_changes(qtbot, project):
    tree = make_tree(qtbot, project)
    tree.ask_name = lambda title, label, initial="": "Zeta.md"
    assert tree.rename_path(project / "train.py") is None
    assert len(tree.errors) == 1 and "already exists" in tree.errors[0]
    assert (project / "train.py").is_file()


def test_cancelled_rename_changes_nothing(qtbot, project):
    tree = make_tree(qtbot, project)
    tree.ask_name = lambda title, label, initial="": None
    assert tree.rename_path(project / "train.py") is None
    assert (project / "train.py").is_file()


def test_delete_asks_first_and_moves_to_the_trash(qtbot, project):
    tree = make_tree(qtbot, project)
    asked = []
    tree.confirm_delete = lambda path: asked.append(path) or False
    assert tree.delete_path(project / "Zeta.md") is None
    assert (project / "Zeta.md").exists()

    tree.confirm_delete = lambda path: True
    with qtbot.waitSignal(tree.sig_path_deleted):
        moved = tree.delete_path(project / "Zeta.md")
    assert asked == [project / "Zeta.md"]
    assert not (project / "Zeta.md").exists()
    assert moved.is_relative_to(project / ".workbench" / "trash")


def test_new_file_is_created_selected_and_opened(qtbot, project):
    tree = make_tree(qtbot, project)
    tree.ask_name = lambda title, label, initial="": "eval.py"
    with qtbot.waitSignal(tree.sig_file_activated) as opened:
        tree.new_file(project / "models")
    assert opened.args == [project / "models" / "eval.py"]
    assert (project / "models" / "eval.py").is_file()
    assert tree.selected_path() == project / "models" / "eval.py"


def test_new_folder_with_an_invalid_name_shows_the_error(qtbot, project):
    tree = make_tree(qtbot, project)
    tree.ask_name = lambda title, label, initial="": "a/b"
    assert tree.new_folder(project) is None
    assert tree.errors and "slash" in tree.errors[0]


def test_enter_on_a_file_activates_it(qtbot, project):
    tree = make_tree(qtbot, project)
    wait_for_names(qtbot, tree, ["models", ".gitignore", "train.py", "Zeta.md"])
    assert tree.select_path(project / "train.py")
    tree.setFocus()
    with qtbot.waitSignal(tree.sig_file_activated) as opened:
        qtbot.keyClick(tree, Qt.Key.Key_Return)
    assert opened.args == [project / "train.py"]


def test_double_click_on_a_file_activates_it(qtbot, project):
    tree = make_tree(qtbot, project)
    wait_for_names(qtbot, tree, ["models", ".gitignore", "train.py", "Zeta.md"])
    with qtbot.waitSignal(tree.sig_file_activated) as opened:
        tree.doubleClicked.emit(tree.index_of("train.py"))
    assert opened.args == [project / "train.py"]


def test_hidden_folders_cannot_be_selected(qtbot, project):
    tree = make_tree(qtbot, project)
    assert tree.select_path(project / ".git") is False


def test_expanded_folders_round_trip(qtbot, project):
    (project / "models" / "old").mkdir()
    tree = make_tree(qtbot, project)
    tree.restore_expanded(["models", "models/old", "no/longer/there"])
    assert tree.expanded_paths() == ["models", "models/old"]

    other = make_tree(qtbot, project)
    other.restore_expanded(tree.expanded_paths())
    assert other.expanded_paths() == ["models", "models/old"]


def test_tree_on_a_digits_project_shows_its_files(qtbot, tmp_path):
    project = create_from_template("digits", tmp_path / "digits")
    tree = make_tree(qtbot, project.root)
    wait_for_names(qtbot, tree, ["hparams", ".gitignore", "data.py", "model.py", "README.md",
                                 "train.py", "workbench.toml"])
