"""Quick Open's services without Qt: the kept file list of a real folder (.gitignore respected,
walked once, kept up to date on demand) and the ranking of files as VS Code ranks them."""

from __future__ import annotations

import heapq
import random
from pathlib import Path

from workbench.platform.fuzzy import match
from workbench.search.file_index import FileIndex, FileList, RecentFiles, walk_project
from workbench.search.fuzzy import RECENT, FileRanker, score_path, split_line_suffix


def write(root: Path, relative: str, text: str = "") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_walk_leaves_out_what_gitignore_files_leave_out_each_for_its_own_folder(tmp_path):
    for name in ("train.py", "model/net.py", "model/net.pyc", "build/out.bin", "data/raw/a.csv",
                 "data/raw/keep.csv", "data/b.csv", ".git/HEAD", "docs/notes.md", "docs/draft.md"):
        write(tmp_path, name)
    write(tmp_path, ".gitignore", "*.pyc\nbuild/\ndata/raw/\n")
    write(tmp_path, "docs/.gitignore", "draft.md\n")
    write(tmp_path, "model/.gitignore", "!net.pyc\n")  # a deeper file brings a file back
    assert sorted(walk_project(tmp_path)) == [
        ".gitignore", "data/b.csv", "docs/.gitignore", "docs/notes.md", "model/.gitignore",
        "model/net.py", "model/net.pyc", "train.py"]


def test_the_list_is_kept_between_keys_and_follows_the_disk_only_when_asked(tmp_path):
    write(tmp_path, "train.py")
    index = FileIndex(tmp_path)
    assert not index.walked and len(index.files) == 0
    index.refresh()
    ranker = FileRanker(index.files)
    write(tmp_path, "trainer_utils.py")
    assert [m.path for m in ranker.rank("train")] == ["train.py"]  # typing never walks the folder
    index.add(tmp_path / "trainer_utils.py")
    assert [m.path for m in FileRanker(index.files).rank("train")] == ["train.py", "trainer_utils.py"]
    (tmp_path / "train.py").unlink()
    index.refresh()
    assert index.files.paths == ("trainer_utils.py",)
    index.remove(tmp_path / "trainer_utils.py")
    assert index.files.paths == ()


def ranked(paths, query, recent=None, limit=50):
    return [m.path for m in FileRanker(FileList.of(paths)).rank(query, recent, limit)]


def test_a_whole_word_beats_word_pieces_beats_inside_a_word_beats_scattered_letters():
    paths = ["src/format_table.py", "src/mytrain.py", "src/tiny_rapid_unit.py", "src/train_loop.py",
             "src/t_r_a_i_n.py"]
    assert ranked(paths, "train") == ["src/train_loop.py", "src/t_r_a_i_n.py", "src/mytrain.py",
                                      "src/tiny_rapid_unit.py"]


def test_the_file_name_beats_the_folders_and_a_slash_matches_the_path():
    paths = ["model/readme.md", "src/model.py", "docs/remodel.md"]
    assert ranked(paths, "model") == ["src/model.py", "docs/remodel.md", "model/readme.md"]
    assert ranked(paths, "model/re") == ["model/readme.md"]
    assert ranked(paths, "model md")[0] == "docs/remodel.md"  # every piece matched in the name


def test_initials_of_words_find_a_file_the_way_vs_code_does():
    paths = ["tools/format.py", "tools/model_tools.py", "tools/mutate.py"]
    assert ranked(paths, "mt")[0] == "tools/model_tools.py"
    assert ranked(paths, "modtools")[0] == "tools/model_tools.py"
    camel = ["src/ModelTools.ts", "src/remote.ts"]
    assert ranked(camel, "mt")[0] == "src/ModelTools.ts"


def test_recently_opened_files_that_match_come_first_most_recent_first():
    paths = ["a/train.py", "b/train_data.py", "c/strain.py", "d/other.py"]
    assert ranked(paths, "train", recent=["c/strain.py", "d/other.py"]) == [
        "c/strain.py", "a/train.py", "b/train_data.py"]
    assert ranked(paths, "", recent=["d/other.py", "c/strain.py", "gone.py"])[:2] == ["d/other.py", "c/strain.py"]
    [first] = FileRanker(FileList.of(paths)).rank("other", ["d/other.py"])
    assert first.recent and first.score >= RECENT


def test_the_matched_letters_are_given_for_highlighting():
    found = score_path("mdtl", "src/model_tools.py")
    assert found is not None
    assert "".join("src/model_tools.py"[i] for i in found[1]) == "mdtl"
    assert match("gfi", "Git Flow: Init").positions == (0, 4, 10)


def test_a_line_number_after_a_colon_is_split_from_the_name():
    assert split_line_suffix("train.py:42") == ("train.py", 42)
    assert split_line_suffix(":7") == ("", 7)
    assert split_line_suffix("c:/x") == ("c:/x", None)


def brute_force(paths: list[str], query: str, limit: int) -> list[str]:
    scored = []
    for index, path in enumerate(sorted(paths)):
        found = score_path(query, path)
        if found is not None:
            scored.append((found[0], -index, path))
    return [path for *_, path in heapq.nlargest(limit, scored)]


def test_the_shortcuts_taken_for_speed_rank_as_scoring_every_file_would():
    # Up to APPROXIMATE_AFTER name matches of a query; beyond, the shortest paths are ranked.
    generator = random.Random(7)
    words = ["model", "train", "data", "loader", "utils", "config", "test", "quant", "export", "agent",
             "Tokenizer", "metrics", "runner", "sync"]
    paths = set()
    while len(paths) < 1000:
        folder = "/".join(generator.choice(words).lower() for _ in range(generator.randint(1, 4)))
        name = "_".join(generator.sample(words, generator.randint(1, 3)))
        paths.add(f"{folder}/{name}{generator.choice(['.py', '.md', '.json'])}")
    paths = sorted(paths)
    for query in ("t", "tr", "train", "tok", "mo", "data_l", "xq", "cfg", "mtr", "loader/"):
        ranker = FileRanker(FileList.of(paths))
        for end in range(1, len(query) + 1):  # as typed, so narrowing from the last key is used
            typed = query[:end]
            fast = [m.path for m in ranker.rank(typed, limit=20)]
            ranker.prepare(typed)
            assert fast == brute_force(paths, typed, 20), typed


def test_recent_files_are_kept_in_the_project_state_folder(tmp_path):
    recent = RecentFiles(tmp_path)
    recent.note("a.py")
    recent.note("b.py")
    recent.note("a.py")
    assert RecentFiles(tmp_path).paths() == ["a.py", "b.py"]
    assert RecentFiles(None).paths() == []
