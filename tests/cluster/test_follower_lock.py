"""One follower a run, held by a lock that a quick look from elsewhere never takes from it."""

from __future__ import annotations

import fcntl
import os
import threading

from workbench.cluster.follower import LOCK_FILE, FollowerLock, is_followed
from workbench.training.run_folder import RunFolder


def test_a_look_at_the_lock_does_not_turn_the_starting_follower_away(tmp_path):
    (tmp_path / LOCK_FILE).touch()
    looking = os.open(tmp_path / LOCK_FILE, os.O_RDONLY)
    fcntl.flock(looking, fcntl.LOCK_SH)  # what is_followed() holds for an instant
    threading.Timer(0.2, os.close, [looking]).start()

    lock = FollowerLock(RunFolder(tmp_path))
    assert lock.acquire()
    assert is_followed(tmp_path)
    assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    lock.release()
    assert not is_followed(tmp_path)


def test_a_second_follower_gives_way_to_the_first(tmp_path):
    first, second = FollowerLock(RunFolder(tmp_path)), FollowerLock(RunFolder(tmp_path))
    assert first.acquire()
    assert not second.acquire()
    first.release()
    assert second.acquire()
    second.release()
