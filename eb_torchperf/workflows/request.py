"""What one audit job is asked to do, and its complete validation before anything runs.

`AuditRequest` is the one frozen options object of the pipeline
(`eb_torchperf.workflows.pipeline`): every shell (`audit`, `explain`, `report`,
`sanity-check`, the EasyBuild hook, the public API) builds one and hands it over.
`validate` checks every option and returns a `Plan` (runner settings, environment,
benchmarks, paths) without starting a process, running pip or touching a reference
venv: `audit --pairs 0` fails in well under a second whatever --reference says.
"""

import dataclasses
import pathlib
import re
from typing import Mapping, Optional, Sequence, Tuple, Union

from eb_torchperf.errors import ConfigError
from eb_torchperf.records.findings import FAIL_LEVELS
from eb_torchperf.measure.interleave import SUITE_OPTIONS, RunnerOptions
from eb_torchperf.measure.reference import check_reference_spec, resolve_interpreter
from eb_torchperf.present.formats import FORMATS
from eb_torchperf.probe import registry
from eb_torchperf.probe.profile import DEFAULT_ROUNDS
from eb_torchperf.workflows.outpath import (  # noqa: F401  (re-exported)
    DEFAULT_OUT_DIR, check_out_name, check_writable, default_out_path)

#: A POSIX environment variable name (--target-env VAR=VALUE).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Report formats (present.formats: no Jinja2 or pandas needed to check them).
REPORT_FORMATS = FORMATS
#: Severities `fail_on` accepts ("never": findings never fail): records.findings.
FAIL_ON = FAIL_LEVELS
#: Largest --timeout accepted, seconds (a week): `inf` or 1e300 would overflow the
#: deadline arithmetic of select() and subprocess.
MAX_TIMEOUT_S = 7 * 24 * 3600
#: Most fresh worker pairs accepted (--pairs): a thousand pairs already take hours.
MAX_PAIRS = 1000
#: --reference values that mean "no reference".
NO_REFERENCE = ("", "none")


@dataclasses.dataclass(frozen=True)
class ExplainOptions:
    """The explain step (profile diff, remedy trials) after the audit.

    Attributes:
        workloads: probe.profile.WORKLOADS names to profile; None: the micro workloads
            (DEFAULT_WORKLOADS) and the models this audit measured; (): none.
        try_remedies: run the remedy trials.
        trial_pairs: fresh worker pairs per remedy trial (None: the baseline's, 1 pair).
        profile_rounds: profile requests per side and workload.
        out: explain JSON path (None: <results stem>.explain.json).
    """

    workloads: Optional[Tuple[str, ...]] = None
    try_remedies: bool = False
    trial_pairs: Optional[int] = None
    profile_rounds: int = DEFAULT_ROUNDS
    out: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class AuditRequest:
    """One audit job: what to measure (or load), how, and what to write.

    Attributes:
        target: interpreter whose torch is audited (None: python3 on PATH).
        reference: interpreter, "wheel", "wheel==X.Y.Z", FILE.whl, or "none"/""
            (None: "wheel").
        suite: "quick" or "full".
        only: benchmark names to run (empty: the suite's plan).
        devices: benchmark devices ("cpu", "cuda").
        target_env, reference_env: environment per side, as {VAR: value or None
            (remove)} or ["VAR=VALUE", "VAR="] (the --target-env form).
        pairs: fresh worker pairs (None: the suite's).
        timeout_s: a worker silent this long is taken as hung (None: the suite's).
        results: a stored results JSON used instead of measuring (explain --results,
            report); then target and reference must be None.
        baseline: a stored results JSON whose target side is the reference (site
            policy's EB_TORCHPERF_REFERENCE=FILE.json); reference must be none.
        keep_findings: a stored audit keeps its findings when it has some (explain
            --results); otherwise the rules run again (report).
        reuse_explain: attach the explain JSON found beside `results` (report).
        out: results JSON to write (None: nothing is saved).
        out_dir, stem: where the reports go and their name (default: beside `out`).
        formats: report formats among REPORT_FORMATS (the JSON is `out`).
        fail_on: exit status 1 when a finding is at or above this severity.
        minimum: the verdict fails below this geometric mean of relative OPS (fraction;
            the site policy's EB_TORCHPERF_MIN_RELATIVE_OPS), None: no minimum.
        explain: run the explain step after the audit (None: no explain).
        cache_dir, pip_options: where and how a wheel reference venv is built.
        stop_on_sigterm: SIGTERM stops the measurement like Ctrl-C and what was
            measured is kept (main thread only: the CLI under Slurm).
        reference_env_extra: overrides of the reference applied after its isolation
            from the target's Python path settings (--reference-env VAR=VALUE).
        keep_reference_env: the reference keeps the target's Python path settings.
        allow_same_torch: an A/A run on purpose: both sides may load one torch.
        wait_idle_s: before measuring, wait up to this many seconds for the allowed
            CPUs to be idle (RunnerOptions.wait_idle_s); None: measure at once.
        trials: an unexplained slowdown with run-time differences is confirmed by
            trials after the audit (explain_stage/confirm.py; measured audits only).
        trial_budget_s: seconds for those trials (None: max(30 s, 30 % of the audit)).
    """

    target: Optional[str] = None
    reference: Optional[str] = None
    suite: str = "quick"
    only: Tuple[str, ...] = ()
    devices: Tuple[str, ...] = ("cpu",)
    target_env: Union[Mapping[str, Optional[str]], Sequence[str], None] = None
    reference_env: Optional[Mapping[str, Optional[str]]] = None
    pairs: Optional[int] = None
    timeout_s: Optional[float] = None
    wait_idle_s: Optional[float] = None
    results: Optional[str] = None
    baseline: Optional[str] = None
    keep_findings: bool = False
    reuse_explain: bool = False
    out: Optional[str] = None
    out_dir: Optional[str] = None
    stem: Optional[str] = None
    formats: Tuple[str, ...] = ()
    fail_on: str = "error"
    minimum: Optional[float] = None
    explain: Optional[ExplainOptions] = None
    cache_dir: Optional[str] = None
    pip_options: Tuple[str, ...] = ()
    stop_on_sigterm: bool = False
    reference_env_extra: Union[Mapping[str, Optional[str]], Sequence[str], None] = None
    keep_reference_env: bool = False
    allow_same_torch: bool = False
    trials: bool = True
    trial_budget_s: Optional[float] = None

    @property
    def reference_spec(self) -> str:
        """The reference spec with its default ("wheel")."""
        return "wheel" if self.reference is None else self.reference

    @property
    def has_reference(self) -> bool:
        """Whether a reference is measured (an interpreter, a wheel or a baseline)."""
        return self.baseline is not None or self.reference_spec not in NO_REFERENCE


@dataclasses.dataclass(frozen=True)
class Plan:
    """A validated AuditRequest: everything the steps need, nothing started yet.

    Attributes:
        request: the request as given.
        options: runner settings of the audit (None for a stored `results`).
        trial_options: runner settings of the remedy trials (None: the baseline's).
        target_env: {VAR: value or None} for the target's workers.
        out: results JSON path, or None.
        profile_options: explain_stage.run.ProfileOptions of the explain step, or None.
        reference_extra: {VAR: value or None} for the reference, after its isolation.
    """

    request: AuditRequest
    options: Optional[RunnerOptions]
    trial_options: Optional[RunnerOptions]
    target_env: Mapping[str, Optional[str]]
    out: Optional[pathlib.Path]
    profile_options: object = None
    reference_extra: Mapping[str, Optional[str]] = dataclasses.field(default_factory=dict)


def parse_env(assignments, option: str = "--target-env") -> dict:
    """["VAR=VALUE", "VAR2="] -> {"VAR": "VALUE", "VAR2": None} (empty value: remove).

    A mapping ({VAR: value or None}) has its names checked and is returned as a dict.

    Raises:
        ConfigError: an item without "=" or whose name is not a variable name.
    """
    if isinstance(assignments, Mapping):
        for name in assignments:
            if not ENV_NAME.fullmatch(str(name)):
                raise ConfigError("environment override %r is not a variable name" % name)
        return {name: _env_value(name, value) for name, value in assignments.items()}
    if isinstance(assignments, str):
        assignments = (assignments,)
    env = {}
    for item in assignments or ():
        name, sep, value = item.partition("=")
        if not sep or not ENV_NAME.fullmatch(name):
            raise ConfigError("%s wants VAR=VALUE with VAR a variable name (letters, "
                              "digits, _; not starting with a digit), not %r" % (option, item))
        env[name] = value or None
    return env


def _env_value(name: str, value) -> Optional[str]:
    """An override's value as text: numbers converted, None kept (remove); else refused."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise ConfigError("environment override %s must be a string, a number or None "
                      "(remove it), not %s %r" % (name, type(value).__name__, value))


def _check_pairs(pairs, pairs_option: str) -> None:
    if pairs is None:
        return
    if not isinstance(pairs, int) or isinstance(pairs, bool):
        raise ConfigError("%s must be a whole number of worker pairs, not %r"
                          % (pairs_option, pairs))
    if pairs < 1:
        raise ConfigError("%s must be at least 1, not %d" % (pairs_option, pairs))
    if pairs > MAX_PAIRS:
        raise ConfigError("%s must be at most %d (a thousand pairs take hours), not %d"
                          % (pairs_option, MAX_PAIRS, pairs))


def runner_options(suite: str, timeout_s: Optional[float], pairs: Optional[int],
                   pairs_option: str = "--pairs", wait_idle_s: Optional[float] = None
                   ) -> RunnerOptions:
    """The suite's runner settings with `timeout_s` (request and start) and `pairs`.

    Args:
        suite: SUITE_OPTIONS key.
        timeout_s: seconds; None keeps the suite's.
        pairs: fresh worker pairs; None keeps the suite's.
        pairs_option: the option name used in the error message.
        wait_idle_s: seconds to wait for an idle host first (None: none).

    Raises:
        ConfigError: timeout <= 0, pairs < 1, wait_idle_s < 0, or settings
            RunnerOptions refuses.
    """
    if suite not in SUITE_OPTIONS:
        raise ConfigError("unknown suite %r (choose from %s)" % (suite, ", ".join(SUITE_OPTIONS)))
    _check_timeout(timeout_s)
    _check_pairs(pairs, pairs_option)
    changes = {}
    if timeout_s is not None:
        changes.update(request_timeout_s=timeout_s, start_timeout_s=timeout_s)
    if pairs is not None:  # an explicit count: exactly that many, no extra pairs (issue 16)
        changes.update(pairs=pairs, max_pairs=pairs)
    if wait_idle_s is not None:
        if not wait_idle_s >= 0:
            raise ConfigError("--wait-idle must be 0 or more seconds, not %s" % wait_idle_s)
        changes.update(wait_idle_s=wait_idle_s)
    try:
        return dataclasses.replace(SUITE_OPTIONS[suite], **changes)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def check_plan(suite: str, devices: Sequence[str], only: Sequence[str]) -> None:
    """Every --only name is in the suite's plan on `devices`, and the plan is not empty.

    Raises:
        ConfigError: unknown names, nothing to measure, or names outside the plan.
    """
    try:
        planned = {name for name, _ in registry.plan(suite, tuple(devices), list(only) or None)}
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    dropped = [name for name in dict.fromkeys(only) if name not in planned]
    if dropped:
        where = ["%s runs in the %s suite on %s" % (name, registry.REGISTRY[name].suites,
                                                   registry.REGISTRY[name].device)
                 for name in dropped]
        raise ConfigError("--only %s: not in the %s suite on %s (%s)" % (
            ", ".join(dropped), suite, "/".join(devices), "; ".join(where)))


def _check_timeout(timeout_s: Optional[float]) -> None:
    if timeout_s is not None and (not isinstance(timeout_s, (int, float))
                                  or isinstance(timeout_s, bool)):
        raise ConfigError("--timeout must be a number of seconds, not %r" % (timeout_s,))
    if timeout_s is not None and not (0 < timeout_s <= MAX_TIMEOUT_S):
        raise ConfigError("--timeout must be a number of seconds > 0 and at most %d (a week), "
                          "not %g" % (MAX_TIMEOUT_S, timeout_s))


def _check_choices(request: AuditRequest) -> None:
    _check_timeout(request.timeout_s)
    budget = request.trial_budget_s
    if budget is not None and not (0 < budget <= MAX_TIMEOUT_S):
        raise ConfigError("--trial-budget must be a number of seconds > 0 and at most %d, "
                          "not %g" % (MAX_TIMEOUT_S, budget))
    unknown = [f for f in request.formats if f not in REPORT_FORMATS]
    if unknown:
        raise ConfigError("unknown report format %s (choose from %s)"
                          % (", ".join(unknown), ", ".join(REPORT_FORMATS)))
    if request.fail_on not in FAIL_ON:
        raise ConfigError("fail_on must be one of %s, not %r" % (", ".join(FAIL_ON),
                                                                  request.fail_on))


def _check_sources(request: AuditRequest) -> None:
    if request.results is not None and (request.target is not None
                                        or request.reference is not None):
        raise ConfigError("--results takes the interpreters from the file; "
                          "leave out --python and --reference")
    if request.baseline is not None and request.reference_spec not in NO_REFERENCE:
        raise ConfigError("a baseline results file is the reference; give no other")
    if request.explain is not None and not request.has_reference and request.results is None:
        raise ConfigError("--explain needs a reference to profile against; "
                          "leave out --reference none")
    _check_cache_dir(request.cache_dir)


def _check_cache_dir(cache_dir: Optional[str]) -> None:
    """--cache-dir is a folder, or does not exist yet under one (it is made then)."""
    if not cache_dir:
        return
    path = pathlib.Path(cache_dir)
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError("--cache-dir %s: %s is not a folder" % (cache_dir, existing))


def _profile_options(request: AuditRequest):
    """The explain step's ProfileOptions (workload names checked too).

    Raises:
        ConfigError: unknown workload, or rounds ProfileOptions refuses.
    """
    from eb_torchperf.probe.profile import WORKLOADS  # torch-free: names and budgets
    from eb_torchperf.explain_stage.profiling import ProfileOptions
    unknown = sorted(set(request.explain.workloads or ()) - set(WORKLOADS))
    if unknown:
        raise ConfigError("unknown workload(s): %s (known: %s)"
                          % (", ".join(unknown), ", ".join(WORKLOADS)))
    rounds = request.explain.profile_rounds
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ConfigError("--profile-rounds must be a whole number >= 1 (got %r): profile "
                          "requests per side and workload" % (rounds,))
    changes = {} if request.timeout_s is None else {"request_timeout_s": request.timeout_s}
    try:
        return ProfileOptions(rounds=request.explain.profile_rounds, **changes)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def validate(request: AuditRequest) -> Plan:
    """Check every option of `request`; start no process, build no venv.

    Interpreter paths are checked for existence (a stat, no process); a bare `wheel`
    reference needs the target's torch version, which `measure` asks later.

    Raises:
        ConfigError: the first bad option, in one line.
    """
    _check_choices(request)
    _check_sources(request)
    options = trial_options = profile_options = None
    if request.results is None:
        options = runner_options(request.suite, request.timeout_s, request.pairs,
                                 wait_idle_s=request.wait_idle_s)
        check_plan(request.suite, request.devices, request.only)
    if request.explain is not None:
        profile_options = _profile_options(request)
        if request.explain.trial_pairs is not None:
            trial_options = runner_options(request.suite, request.timeout_s,
                                           request.explain.trial_pairs, "--trial-pairs")
    target_env = parse_env(request.target_env)
    parse_env(request.reference_env or {})
    reference_extra = parse_env(request.reference_env_extra or (), "--reference-env")
    # --target-env on one build is an environment A/B on purpose (README, GPU): the two
    # sides then differ by the override, not by their torch
    isolation = dict(allow_same_torch=request.allow_same_torch or bool(target_env),
                     keep_reference_env=request.keep_reference_env)
    options = options and dataclasses.replace(options, **isolation)
    trial_options = trial_options and dataclasses.replace(trial_options, **isolation)
    out = pathlib.Path(request.out) if request.out else None
    if out is not None and request.results is None:
        check_out_name(out)
        check_writable(out)
    if request.results is None:
        resolve_interpreter(request.target or "python3", "target")
        check_reference_spec(request.reference_spec)
    return Plan(request, options, trial_options, target_env, out, profile_options,
                reference_extra)
