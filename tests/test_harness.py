"""The test run itself: what a test starts ends with it."""

import os
import subprocess
import sys
import time

from conftest import end_started


def test_a_process_a_test_started_ends_with_it_and_so_do_its_children(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time, pathlib; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        f"pathlib.Path({str(pid_file)!r}).write_text(str(child.pid)); time.sleep(600)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while not pid_file.is_file() or not pid_file.read_text():
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    end_started()  # as the test's end does (and pytest's exit after Ctrl-C)
    parent.wait(timeout=60)
    for _ in range(600):
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        if open(f"/proc/{grandchild}/stat").read().split(")")[1].split()[0] == "Z":
            break  # ended, waiting only for its parent's reaper
        time.sleep(0.05)
    else:
        raise AssertionError("the grandchild outlived the test")
