"""The audit's progress line says the time spent and an estimate of the time left."""

import io

from rich.console import Console

from eb_torchperf.present.terminal import AuditProgress


def test_progress_shows_time_spent_and_left():
    console = Console(file=io.StringIO(), width=150, force_terminal=True, color_system=None)
    progress = AuditProgress(console, 10)
    with progress:
        progress("bench", pair=0, total=10, index=3, pairs=1, name="matmul_fp32", params={})
        progress.progress.refresh()
    text = console.file.getvalue()
    assert "3/10" in text and "spent," in text and " left" in text
