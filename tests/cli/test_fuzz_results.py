"""Fuzz test of the stored-results loader: seeded random mutations of golden results
files run through `report`, `compare` and `gpu` in-process.

Each mutated file either still reads (exit 0 or 1) or is refused with exit 2 and one
line on stderr; never a traceback, never exit 3 (an internal error).  Bounded in count
(FUZZ_CASES, spread over the three commands) and in time (FUZZ_BUDGET_S: cases left
when the budget is spent are skipped, and the count run is printed).
"""

import copy
import json
import pathlib
import random
import time

from eb_torchperf import cli

DATA = pathlib.Path(__file__).parent.parent / "data"
FUZZ_CASES = 300
FUZZ_BUDGET_S = 240.0
SEED = 14

#: Values put in place of a field: every JSON type, edge numbers, markup-like text.
REPLACEMENTS = (None, True, False, 0, -1, 7, 1.5, -2.5, 1e308, "", "x", "[/x]", "12",
                [], [None], ["a"], [1, 2], {}, {"a": 1}, {"x": None})
#: Values of the same type as the field they replace: past the type checks, into the
#: rules, the comparison and the templates.
SAME_TYPE = {str: ("", "[/x]", "a|b\n\n<script>x</script>", "`x`", "9.9.9"),
             int: (0, -1, 1, 10 ** 12), float: (0.0, -1.0, 1e-300, 1e300, 2.5),
             list: ([],), dict: ({},), bool: (True, False)}


def _nodes(value, path=()):
    """Every (path) to a value inside `value` (objects and lists, depth first)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _nodes(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:6]):
            yield from _nodes(item, path + (index,))


def mutate(document: dict, rng: random.Random) -> dict:
    """A copy of `document` with 1-3 fields replaced, removed or retyped."""
    doc = copy.deepcopy(document)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _nodes(doc) if p]
        path = rng.choice(paths)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        how = rng.random()
        kind = type(parent[key])
        if how < 0.4 and kind in SAME_TYPE:
            parent[key] = copy.deepcopy(rng.choice(SAME_TYPE[kind]))
        elif how < 0.5 and isinstance(parent, dict):
            del parent[key]
        elif how < 0.6 and isinstance(parent[key], (int, float)) and \
                not isinstance(parent[key], bool):
            parent[key] = str(parent[key])
        else:
            parent[key] = copy.deepcopy(rng.choice(REPLACEMENTS))
    return doc


def _run(argv, capsys):
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.err


CASES = [("report", DATA / "results-debian-vs-wheel-v1.json"),
         ("compare", DATA / "results-debian-vs-wheel-v1.json"),
         ("gpu", DATA / "h200-quick-normal.json"),
         ("report", DATA / "h200-quick-normal.json")]


def test_mutated_results_give_one_line_and_exit_2_never_a_traceback(tmp_path, capsys):
    rng = random.Random(SEED)
    goldens = {path: json.loads(path.read_text()) for _, path in CASES}
    started, ran, refused, failures = time.monotonic(), 0, 0, []
    for index in range(FUZZ_CASES):
        if time.monotonic() - started > FUZZ_BUDGET_S:
            break
        command, golden = CASES[index % len(CASES)]
        mutated = tmp_path / ("case%d.json" % index)
        mutated.write_text(json.dumps(mutate(goldens[golden], rng)))
        out_dir = tmp_path / "out"
        argv = {"report": ["report", str(mutated), "--format", "md,html,json",
                           "--out-dir", str(out_dir)],
                "compare": ["compare", str(golden), str(mutated), "--format", "md",
                            "--out-dir", str(out_dir)],
                "gpu": ["gpu", str(mutated), "--markdown", str(out_dir / "gpu.md")]}[command]
        code, err = _run(argv, capsys)
        ran += 1
        lines = err.strip().splitlines()
        if code == 2:
            refused += 1
        if code not in (0, 1, 2) or "Traceback" in err or (code == 2 and len(lines) != 1):
            failures.append((index, command, code, err.strip()[:300]))
    print("fuzz: %d cases run, %d refused with exit 2" % (ran, refused))
    assert ran >= 50, "the time budget allowed only %d cases" % ran
    assert refused >= ran // 4  # the mutations do hit the checks
    assert not failures, "\n".join("case %d %s: exit %s: %s" % f for f in failures[:10])
