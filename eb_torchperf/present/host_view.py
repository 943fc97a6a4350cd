"""The "Host and job" section and the verdict's host clause (issue 29).

The rows come from the target's `host` facts (probe/hostjob.py): what this job gets
next to what the node has (or the default), "unknown: <reason>" where the host hid
it.  The notes say where the probe's own isolation (its flags, its environment, its
malloc settings) measured something other than what a job started the usual way
gets.  Findings whose subject is "host" (diagnosis/rules/host.py) cost both sides
alike: the verdict then says the build's figures hold *on this host*.
"""

from typing import List, Optional, Sequence, Tuple

from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import ProbeResult

HOST_SUBJECT = "host"
MISSING = "—"
_BLOCKING = ("error", "warning")


def _value(value, unit: str) -> str:
    """A check's value: numbers with their unit, lists one entry per GPU."""
    if value is None:
        return MISSING
    if isinstance(value, list):
        return "; ".join("GPU %d: %s" % (i, _value(v, unit)) for i, v in enumerate(value)) \
            or MISSING
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("%g %s" % (value, unit)).strip()
    return str(value)


def host_rows(probe: Optional[ProbeResult]) -> List[dict]:
    """[{check, job, node, note, source}] in the probe's order; [] without host facts
    (results from before issue 29)."""
    checks = (probe.facts or {}).get("host") if probe is not None else None
    if not isinstance(checks, dict):
        return []
    rows = []
    for check in checks.values():
        if not isinstance(check, dict):
            continue
        unit = str(check.get("unit") or "")
        unknown = check.get("unknown")
        rows.append({"check": str(check.get("label", "")),
                     "job": _value(check.get("process"), unit) if not unknown else "unknown",
                     "node": _value(check.get("node"), unit),
                     "note": "unknown: %s" % unknown if unknown else "",
                     "source": str(check.get("source", ""))})
    return rows


def isolation_notes(probe: Optional[ProbeResult]) -> List[str]:
    """Where the probe's isolation hides what a job started the usual way would get."""
    if probe is None:
        return []
    notes = []
    malloc = (probe.facts or {}).get("allocator") or {}
    if malloc.get("applied"):
        notes.append("The workers set glibc malloc to reuse its heap (%s) before importing "
                     "torch, on both sides (probe/allocator.py); a job started the usual way "
                     "keeps glibc's defaults, where large tensors are mapped fresh and "
                     "page-faulted on first touch. EBTP_KEEP_MALLOC=1 measures that instead."
                     % malloc.get("reason", "heap reuse"))
    user_site = probe.fact("isolation", "user_site")
    if user_site:
        notes.append("The workers run python -s: the user site-packages %s, which a job "
                     "started the usual way imports from, was not on sys.path." % user_site)
    if probe.facts and probe.facts.get("host") is not None:
        notes.append("The workers get an allow-listed environment (measure/runner.py "
                     "ENV_ALLOW: every variable the probe records passes); other variables "
                     "of this shell did not reach them.")
    return notes


def host_status(status: str, findings: Sequence[Finding]) -> Tuple[str, str]:
    """The verdict's status and host clause.

    Returns:
        (status, clause): "OK" becomes "OK ON THIS HOST" (and a status that only host
        findings raised, "<LEVEL> ON THIS HOST") when a host finding is there; the
        clause names what the host costs both sides ("" without host findings).
    """
    host = [f for f in findings if f.subject == HOST_SUBJECT]
    if not host:
        return status, ""
    only_host = not any(f.severity in _BLOCKING and f.subject != HOST_SUBJECT
                        for f in findings)
    if status == "OK" or (only_host and status in ("WARNING", "ERROR")):
        status += " ON THIS HOST"
    return status, "the host limits both sides: %s" % "; ".join(f.title for f in host)


def only_host(findings: Sequence[Finding]) -> bool:
    """Every warning/error finding is about the host (the verdict names none as top)."""
    return all(f.subject == HOST_SUBJECT for f in findings if f.severity in _BLOCKING)


def host_table(rows: List[dict], notes: Sequence[str]):
    """The section as a rich Table (None without rows); `notes` as its caption."""
    if not rows:
        return None
    from rich.table import Table  # present/ may use rich; loaded only with rows
    from eb_torchperf.present import escape
    table = Table(title="Host and job (shared by both sides: an A/B cannot see these)",
                  caption="\n".join(notes) or None, caption_justify="left")
    for column in ("check", "this job gets", "node / default", "note"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*map(escape.rich_text, (row["check"], row["job"], row["node"],
                                              row["note"])),
                      style="dim" if row["note"] else None)
    return table
