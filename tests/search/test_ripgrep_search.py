"""Find in Files' service: real rg on real trees, its --json output read into files and matches."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.search.ripgrep import SearchError, SearchQuery, search_files, split_globs
from workbench.tasks import CancelToken, Cancelled


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def found(root: Path, query: SearchQuery, **options) -> dict[str, list[tuple[int, list[str]]]]:
    files = []
    search_files(root, query, files.extend, **options)
    return {f.path: [(line.line, [s.text for s in line.submatches]) for line in f.lines] for f in files}


def test_results_are_grouped_by_file_with_each_line_and_match(tmp_path):
    write(tmp_path, {"a.py": "alpha = 1\nbeta = alpha + alpha\n", "pkg/b.py": "no\nALPHA\n", "c.txt": "none\n"})
    assert found(tmp_path, SearchQuery("alpha")) == {
        "a.py": [(1, ["alpha"]), (2, ["alpha", "alpha"])], "pkg/b.py": [(2, ["ALPHA"])]}


def test_case_whole_word_and_regex_narrow_the_matches(tmp_path):
    write(tmp_path, {"a.py": "Size size sizes\nresize(x)\n"})
    assert found(tmp_path, SearchQuery("size", case_sensitive=True)) == {"a.py": [(1, ["size", "size"]), (2, ["size"])]}
    assert found(tmp_path, SearchQuery("size", whole_word=True)) == {"a.py": [(1, ["Size", "size"])]}
    assert found(tmp_path, SearchQuery(r"re\w+\(", regex=True)) == {"a.py": [(2, ["resize("])]}
    # Not a regex unless asked: the dot and parenthesis are literal.
    assert found(tmp_path, SearchQuery("e(x")) == {"a.py": [(2, ["e(x"])]}


def test_gitignore_is_respected_even_outside_a_git_repository(tmp_path):
    write(tmp_path, {".gitignore": "build/\n*.log\n", "build/out.py": "needle\n", "run.log": "needle\n",
                     "src/main.py": "needle\n", ".workbench/autosave/x.py": "needle\n"})
    assert list(found(tmp_path, SearchQuery("needle"))) == ["src/main.py"]


def test_include_and_exclude_globs_choose_the_files(tmp_path):
    write(tmp_path, {"src/a.py": "x\n", "src/a.txt": "x\n", "tests/t.py": "x\n", "docs/d.md": "x\n"})
    assert sorted(found(tmp_path, SearchQuery("x", include=("*.py",)))) == ["src/a.py", "tests/t.py"]
    assert sorted(found(tmp_path, SearchQuery("x", exclude=split_globs("tests/**, *.md")))) == ["src/a.py", "src/a.txt"]
    assert sorted(found(tmp_path, SearchQuery("x", include=("src/**",), exclude=("*.txt",)))) == ["src/a.py"]


def test_match_offsets_are_characters_in_the_line_and_bytes_in_the_file(tmp_path):
    write(tmp_path, {"u.py": "# héllo wörld\r\nprint('wörld')\n"})
    files = []
    search_files(tmp_path, SearchQuery("wörld"), files.extend)
    first, second = files[0].lines
    assert first.text == "# héllo wörld"  # no line ending kept
    sub = first.submatches[0]
    assert first.text[sub.start:sub.end] == "wörld"
    data = (tmp_path / "u.py").read_bytes()
    assert data[sub.byte_start:sub.byte_end].decode() == "wörld"
    sub = second.submatches[0]
    assert second.text[sub.start:sub.end] == "wörld"
    assert data[sub.byte_start:sub.byte_end].decode() == "wörld"


def test_an_invalid_regex_says_what_is_wrong_in_rgs_words(tmp_path):
    write(tmp_path, {"a.py": "x\n"})
    with pytest.raises(SearchError) as raised:
        search_files(tmp_path, SearchQuery("foo(bar", regex=True), lambda batch: None)
    assert str(raised.value).startswith("Not a valid regular expression: unclosed group.")
    assert "foo(bar" in str(raised.value)  # the pattern is shown, with a caret under the fault
    # The same text as a literal is fine.
    assert search_files(tmp_path, SearchQuery("foo(bar"), lambda batch: None).files == 0


def test_a_bad_glob_and_an_empty_pattern_are_refused_with_a_reason(tmp_path):
    write(tmp_path, {"a.py": "x\n"})
    with pytest.raises(SearchError, match="A file glob cannot be read: '{a': unclosed"):
        search_files(tmp_path, SearchQuery("x", include=("{a",)), lambda batch: None)
    with pytest.raises(SearchError, match="Type the text"):
        search_files(tmp_path, SearchQuery(""), lambda batch: None)


def test_a_pattern_starting_with_a_dash_is_searched_for(tmp_path):
    write(tmp_path, {"a.sh": "ls --all\n"})
    assert found(tmp_path, SearchQuery("--all")) == {"a.sh": [(1, ["--all"])]}


def test_results_stop_at_the_limit_and_say_so(tmp_path):
    write(tmp_path, {f"f{i:03}.txt": "hit\n" * 10 for i in range(50)})
    files = []
    summary = search_files(tmp_path, SearchQuery("hit"), files.extend, max_matches=95)
    assert summary.limit_hit
    assert 95 <= sum(f.match_count for f in files) < 500
    assert summary.matches == sum(f.match_count for f in files)
    whole = search_files(tmp_path, SearchQuery("hit"), lambda batch: None)
    assert (whole.files, whole.matches, whole.limit_hit) == (50, 500, False)


def test_a_cancelled_search_ends_rg_and_raises_cancelled(tmp_path):
    write(tmp_path, {f"d{i // 100}/f{i}.txt": "needle\n" for i in range(2000)})
    token = CancelToken()
    batches = []

    def first_batch_cancels(batch):
        batches.append(batch)
        token.cancel()

    with pytest.raises(Cancelled):
        search_files(tmp_path, SearchQuery("needle"), first_batch_cancels, cancel=token)
    assert sum(len(b) for b in batches) < 2000


def test_the_first_file_comes_in_a_batch_of_its_own(tmp_path):
    write(tmp_path, {f"f{i}.txt": "needle\n" for i in range(300)})
    batches = []
    summary = search_files(tmp_path, SearchQuery("needle"), batches.append)
    assert len(batches[0]) == 1
    assert sum(len(b) for b in batches) == summary.files == 300
