"""The device's log, streamed to connections that subscribe (section 11)."""

from __future__ import annotations

import time

from .frames import Link


def _next_log(link: Link, timeout: float = 10.0):
    """The next log frame (one kept while waiting for a reply first); None after ``timeout``."""
    if link.logs:
        return link.logs.pop(0)
    link.sock.settimeout(timeout)
    try:
        frame = link.read()
    except OSError:
        return None
    finally:
        link.sock.settimeout(20)
    assert frame is not None
    return frame[0]


def test_a_subscriber_gets_the_devices_log_lines_and_can_still_make_requests(connect):
    follower = connect(session=False)
    assert follower.ok("logs.subscribe", level="info")["level"] == "info"
    worker = connect()  # opening a session is logged at info
    session_id = worker.ok("info")["session_id"]
    messages = []
    deadline = time.monotonic() + 10
    while not any(session_id in m for m in messages) and time.monotonic() < deadline:
        line = _next_log(follower, max(0.1, deadline - time.monotonic()))
        if line is None:
            break
        assert line["type"] == "log" and "id" not in line
        assert isinstance(line["time"], (int, float)) and line["time"] > 1e9
        assert line["level"] in ("info", "warning", "error")
        assert isinstance(line["message"], str)
        messages.append(line["message"])
    assert any(session_id in m for m in messages), messages
    assert follower.ok("info")["device_id"]  # replies still find their way between log lines


def test_a_warning_subscriber_gets_warnings_only(agent, connect):
    follower = connect(session=False)
    assert follower.ok("logs.subscribe", level="WARNING")["level"] == "warning"
    connect()  # an info line, not for this subscriber
    bad = agent.link()
    bad.send_raw(b"garbage that is no frame!")  # a warning: a connection closed for a bad frame
    line = _next_log(follower)
    assert line is not None and line["level"] == "warning"
    bad.close()


def test_an_unknown_level_is_refused(connect):
    link = connect(session=False)
    assert link.error("logs.subscribe", level="chatty")["code"] == "bad_request"
