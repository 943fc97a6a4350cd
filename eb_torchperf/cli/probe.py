"""Print the build and runtime facts of an interpreter's torch as one JSON document.

Nothing is installed into the interpreter: the probe runs from a temporary folder.
"""

import json
import sys

from eb_torchperf.records import safe_write
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.measure.reference import resolve_interpreter
from eb_torchperf.measure.runner import run_probe


def add_arguments(parser) -> None:
    parser.add_argument("--python", default="python3",
                        help="interpreter whose torch to probe (default: python3 on PATH)")
    parser.add_argument("--out", default="-", help="write the JSON here (default: stdout)")


def run(args) -> int:
    python = resolve_interpreter(args.python, "target")
    facts = run_probe(python)
    probe = ProbeResult.from_facts("target", python, facts)
    document = {"python": python, "facts": facts, "build": probe.build.to_json(),
                "parallel": probe.parallel}
    text = json.dumps(document, indent=1, default=str) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        safe_write.write_text(args.out, text)
    return 0
