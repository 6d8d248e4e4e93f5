from tests.git.conftest import git
from workbench.git.graph import GraphLine, layout_graph
from workbench.git.history import log
from workbench.git.repository import open_repository


def _edges_drawn(commits, rows):
    """Follow every line down from each commit and return the (child, parent) pairs it reaches;
    also checks that every line ends where the next row has a dot or a line going on."""
    edges = set()
    for start, row in enumerate(rows):
        for line in row.lines:
            if line.from_column != row.column:
                continue
            column, index = line.to_column, start + 1
            while index < len(rows):
                below = rows[index]
                if column == below.column:
                    edges.add((row.sha, below.sha))
                    break
                onward = [next_line for next_line in below.lines if next_line.from_column == column]
                assert len(onward) == 1, f"lane {column} is lost at row {index}"
                column, index = onward[0].to_column, index + 1
    return edges


def _parent_edges(commits):
    shown = {sha for sha, _ in commits}
    return {(sha, parent) for sha, parents in commits for parent in parents if parent in shown}


def test_a_straight_history_stays_in_one_column():
    commits = [(f"c{n}", (f"c{n + 1}",)) for n in range(5)] + [("c5", ())]
    rows = layout_graph(commits)
    assert [row.column for row in rows] == [0] * 6
    assert all(row.lines == (GraphLine(0, 0, 0),) for row in rows[:-1])
    assert rows[-1].lines == () and {row.width for row in rows} == {1}


def test_a_merge_opens_a_lane_for_the_merged_branch_which_bends_back_where_it_started():
    commits = [("M", ("A", "F")), ("F", ("B",)), ("A", ("B",)), ("B", ())]
    rows = layout_graph(commits)
    assert [(row.sha, row.column) for row in rows] == [("M", 0), ("F", 1), ("A", 0), ("B", 0)]
    assert set(rows[0].lines) == {GraphLine(0, 0, rows[0].colour), GraphLine(0, 1, rows[1].colour)}
    assert rows[1].colour != rows[0].colour
    # Below A, the feature lane bends into B, where the branch started.
    assert GraphLine(1, 0, rows[1].colour) in rows[2].lines
    assert rows[2].lines_in == rows[1].lines
    assert _edges_drawn(commits, rows) == _parent_edges(commits)


def test_two_branch_tips_from_one_commit_take_two_columns_and_meet_at_the_fork():
    commits = [("T1", ("X",)), ("T2", ("X",)), ("X", ("R",)), ("R", ())]
    rows = layout_graph(commits)
    assert [row.column for row in rows] == [0, 1, 0, 0]
    assert rows[0].colour != rows[1].colour
    assert set(rows[1].lines) == {GraphLine(0, 0, rows[0].colour), GraphLine(1, 0, rows[1].colour)}
    assert _edges_drawn(commits, rows) == _parent_edges(commits)


def test_an_octopus_merge_draws_a_line_to_each_parent():
    commits = [("O", ("A", "B", "C", "D")), ("D", ("R",)), ("C", ("R",)), ("B", ("R",)), ("A", ("R",)), ("R", ())]
    rows = layout_graph(commits)
    octopus = rows[0]
    assert sorted(line.to_column for line in octopus.lines) == [0, 1, 2, 3]
    assert len({line.colour for line in octopus.lines}) == 4
    assert rows[-1].column == 0
    assert _edges_drawn(commits, rows) == _parent_edges(commits)


def test_a_merge_of_a_branch_that_already_has_a_lane_reuses_that_lane():
    # T2 merges X (T1's parent) while T1's lane already waits for X.
    commits = [("T1", ("X",)), ("T2", ("Y", "X")), ("Y", ("X",)), ("X", ())]
    rows = layout_graph(commits)
    assert rows[1].column == 1
    assert GraphLine(1, 0, rows[0].colour) in rows[1].lines
    assert max(row.width for row in rows) == 2
    assert _edges_drawn(commits, rows) == _parent_edges(commits)


def test_freed_columns_are_reused_so_many_short_branches_stay_narrow():
    commits = []
    for n in range(2000):
        # main commit m{n} merges a one-commit branch b{n} that forks from m{n+1}
        commits.append((f"m{n}", (f"m{n + 1}", f"b{n}")))
        commits.append((f"b{n}", (f"m{n + 1}",)))
    commits.append(("m2000", ()))
    rows = layout_graph(commits)
    assert len(rows) == len(commits)
    assert max(row.width for row in rows) == 2
    assert _edges_drawn(commits, rows) == _parent_edges(commits)


def test_parents_beyond_the_loaded_page_keep_their_lanes_running_down():
    rows = layout_graph([("M", ("A", "F"))])
    assert set(rows[0].lines) == {GraphLine(0, 0, 0), GraphLine(0, 1, 1)}


def test_a_parent_listed_above_its_child_gets_no_lane_that_would_run_forever():
    rows = layout_graph([("P", ()), ("C", ("P",)), ("D", ())])
    assert [row.column for row in rows] == [0, 0, 0] and rows[1].lines == ()


def test_lanes_for_a_real_merge_history_connect_every_commit_to_its_parents(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    for branch in ("one", "two"):
        git(root, "checkout", "-q", "-b", branch, "main")
        for number in range(2):
            (root / f"{branch}{number}.txt").write_text("x\n")
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", f"{branch} {number}")
    git(root, "checkout", "-q", "main")
    (root / "a.txt").write_text("b\n")
    git(root, "commit", "-q", "-am", "main work")
    git(root, "merge", "-q", "--no-ff", "-m", "merge one", "one")
    git(root, "merge", "-q", "--no-ff", "-m", "merge two", "two")
    entries = log(open_repository(root), all_refs=True)
    commits = [(entry.sha, entry.parents) for entry in entries]
    rows = layout_graph(commits)
    assert [row.sha for row in rows] == [entry.sha for entry in entries]
    assert rows[0].column == 0 and max(row.width for row in rows) == 3
    assert _edges_drawn(commits, rows) == _parent_edges(commits)
