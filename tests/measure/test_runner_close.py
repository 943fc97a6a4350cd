"""Worker.close on a worker that never said hello (issue 27, fresh-user pass: Ctrl-C
while the target hangs at start-up waited 10 s for an answer to "quit" that a process
still importing torch cannot give)."""

import subprocess
import sys

from eb_torchperf.measure.runner import Worker


def test_a_worker_that_never_started_is_killed_without_asking(monkeypatch, tmp_path):
    worker = Worker(sys.executable, str(tmp_path))
    worker.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                                   start_new_session=True)
    asked = []
    monkeypatch.setattr(worker, "request", lambda op, **kw: asked.append(op))
    worker.close()
    assert asked == []  # no "quit" to a process that cannot answer it
    assert worker.proc.poll() is not None  # its process group is gone


def test_a_started_worker_is_asked_to_quit_first(monkeypatch, tmp_path):
    worker = Worker(sys.executable, str(tmp_path))
    worker.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                                   start_new_session=True)
    worker.hello = {"pid": worker.proc.pid}
    asked = []
    monkeypatch.setattr(worker, "request", lambda op, **kw: asked.append(op))
    monkeypatch.setattr(worker.proc, "wait", lambda timeout=None: None)
    worker.close()
    assert asked == ["quit"]
