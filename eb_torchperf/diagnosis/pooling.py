"""Whether several audits can be pooled: the same two builds, on the same kind of host.

`benchmarks/models_vs_micro.py` pools a `--suite models` audit with `--suite full
--only ...` audits of the micro rows.  Relative OPS depend on the host as much as on
the builds: Debian's torch 1.13 against the 2.13.0 wheel read alexnet inference at
26.5 % on the AVX512 dev VM and at 41.4 % on an AVX2 one (issue 17, fresh-user pass,
2026-12-02), so rows measured on other hardware do not explain a model measured here.
Two audits pool when every field of `identity` agrees; the torch builds are compared
by their build fingerprint (probe.facts.build_fingerprint: version, git version and a
hash of `torch.__config__.show()`, which also names the CPU capability in use), so a
reference venv rebuilt under another folder name still pools.
"""

import os
from typing import List, Optional, Tuple

from eb_torchperf.diagnosis.peak import vector_isa
from eb_torchperf.errors import TorchPerfError
from eb_torchperf.records.measurements import AuditResult, ProbeResult, load_results

def _build(probe: Optional[ProbeResult]) -> Optional[str]:
    """A side's torch build: its fingerprint, else its torch file, else its python."""
    if probe is None:
        return None
    torch = probe.facts.get("torch") or {}
    return torch.get("fingerprint") or torch.get("file") or probe.python


def _cpu(result: AuditResult) -> Optional[str]:
    """'AuthenticAMD AMD EPYC, avx2, 2 allowed cores' from the target's probe."""
    cpu = (result.target.facts.get("cpu") or {}) if result.target else {}
    if not cpu:
        return None
    return "%s %s, %s, %s allowed cores" % (cpu.get("vendor") or "?", cpu.get("model") or "?",
                                           vector_isa(cpu) or "?",
                                           cpu.get("allowed_cores") or "?")


def _ran_with(probe: Optional[ProbeResult]) -> dict:
    """What a side ran with of the variables torch and its libraries read: its probe's
    `env` fact (probe/envprefixes.py; the runner passes only those on to the workers).

    Not the audit's override options: the EasyBuild hook gives the reference overrides
    that undo the module's settings (EBROOTPYTORCH, PATH, Lmod's tables, the module's
    own OMP_NUM_THREADS ...), a CLI audit none, and both run the reference alike
    (issue 31: no hook audit could be compared with another build).
    """
    return dict((probe.facts.get("env") or {}) if probe is not None else {})


def identity(result: AuditResult) -> List[Tuple[str, object]]:
    """(field, value) pairs that pooled audits must share, in the order they are checked:
    the host first, since a build's fingerprint also changes with the CPU capability."""
    return [("host", result.host),
            ("CPU", _cpu(result)),
            ("target torch build", _build(result.target)),
            ("reference torch build", _build(result.reference)),
            ("target environment", dict(result.options.get("target_env") or {})),
            ("reference environment", _ran_with(result.reference))]


def _side_text(probe: Optional[ProbeResult]) -> str:
    return probe.python if probe else "none"


def _difference(result: AuditResult, first: AuditResult) -> Optional[str]:
    """'the CPU differs (A against B)' for the first field of `identity` that differs."""
    for (field, mine), (_, theirs) in zip(identity(result), identity(first)):
        if mine != theirs:
            return "the %s differs (%s against %s)" % (field, mine, theirs)
    return None


def mismatch(path: str, result: AuditResult, first_path: str, first: AuditResult
             ) -> Optional[str]:
    """One line saying why `result` (from `path`) cannot be pooled with the first audit,
    with what to do instead; None when it can."""
    difference = _difference(result, first)
    if difference is None:
        return None
    return ("cannot pool %s with %s: %s; pool only audits of the same two builds on the "
            "same host: measure the missing rows here (eb-torchperf audit --python %s "
            "--reference %s --suite full --only ROW ...)"
            % (path, first_path, difference, _side_text(first.target),
               _side_text(first.reference)))


def same_audit(result: AuditResult, other: AuditResult) -> bool:
    """True when two loaded results are one measurement (a copy of the same file, perhaps
    with paths edited): same start time, wall time and number of samples."""
    return (bool(result.created_utc) and result.created_utc == other.created_utc
            and result.wall_s == other.wall_s and len(result.results) == len(other.results))


def profiles_mismatch(explain_file: str, explained, first_path: str,
                      first: AuditResult
                      ) -> Optional[str]:
    """One line saying why the profiles in `explain_file` do not belong to the first audit,
    or None (`explained`: an explain_stage.explanation.ExplainResult).  The profiles' own
    interpreters must be the audit's, and where the explain
    document names its baseline results file and that file is readable, that audit must
    pool with the first (same host, CPU, builds, environments)."""
    remedy = ("; profile this audit instead: eb-torchperf explain --results %s --no-remedies"
              % first_path)
    if first.target and first.reference and (explained.target, explained.reference) != (
            first.target.python, first.reference.python):
        return ("the profiles in %s are of %s against %s, the audit %s of %s against %s%s"
                % (explain_file, explained.target, explained.reference, first_path,
                   first.target.python, first.reference.python, remedy))
    baseline = explained.results_file
    if baseline and os.path.isfile(baseline):
        try:
            difference = _difference(load_results(baseline), first)
        except TorchPerfError:
            return None
        if difference:
            return ("the profiles in %s were made for %s, which does not pool with %s (%s)%s"
                    % (explain_file, baseline, first_path, difference, remedy))
    return None
