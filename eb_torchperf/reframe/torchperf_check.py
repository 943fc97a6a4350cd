"""ReFrame check: audit a PyTorch on a system partition with eb-torchperf.

Run it with `reframe -c "$(python -m eb_torchperf.reframe)" -r`, in an environment where
eb_torchperf and ReFrame are installed.  Set what to audit with `-S`:

    -S TorchPerfCheck.modules=PyTorch/2.9.1-foss-2025a   (ReFrame loads it in the job)
    -S TorchPerfCheck.target_python=python3              (interpreter after module load)
    -S TorchPerfCheck.reference_python=/shared/venvs/torch-wheel/bin/python
    -S TorchPerfCheck.only=matmul_fp32,conv2d -S TorchPerfCheck.pairs=1

Sanity: the audit completed, measured something, and has no finding of severity
"error".  Performance variables (see eb_torchperf.reframe.metrics): relative OPS per
benchmark in "x" (1.0 = the reference's speed), absolute rates of both sides, and
their geometric mean, so a site sets references per system and partition in a
subclass, e.g.

    @rfm.simple_test
    class SiteTorchPerf(TorchPerfCheck):
        reference = {'cluster:zen': {'geomean': (1.0, -0.1, None, 'x'),
                                     'matmul_fp32_target': (2000, -0.2, None, 'GFLOP/s')}}
"""

import os
import shlex
from typing import List

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_before, sanity_function, variable

from eb_torchperf.errors import ConfigError
from eb_torchperf.fleet.plan import AuditSpec, default_launcher
from eb_torchperf.reframe.metrics import analysed_results, perf_metrics, sanity_problems

#: Results file the audit writes in the stage directory.
RESULTS_NAME = "torchperf.json"


def launcher_words(launcher: str) -> List[str]:
    """The `launcher` variable as words.

    Raises:
        ConfigError: it is empty or not valid shell words (one line, not an IndexError).
    """
    try:
        words = shlex.split(launcher or "")
    except ValueError as exc:
        raise ConfigError("launcher %r: %s" % (launcher, exc)) from None
    if not words:
        raise ConfigError("launcher is empty: give the command that runs eb-torchperf, "
                          "e.g. %r" % " ".join(default_launcher()))
    return words


def _value(value):
    """Identity: the performance function of an already computed metric."""
    return value


@rfm.simple_test
class TorchPerfCheck(rfm.RunOnlyRegressionTest):
    """eb-torchperf audit of one PyTorch against a reference on one partition."""

    descr = "eb-torchperf: relative OPS of a PyTorch build against a reference"
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    tags = {"torchperf", "pytorch", "performance"}
    num_tasks = 1
    time_limit = "30m"

    #: Interpreter whose torch is audited, as found in the job (after `modules`).
    #: :type: str  :default: "python3"
    target_python = variable(str, value="python3")
    #: Reference: interpreter path, "wheel", "wheel==X.Y.Z" (pip in the job) or "none".
    #: :type: str  :default: "wheel"
    reference_python = variable(str, value="wheel")
    #: eb-torchperf suite: "quick" or "full".
    #: :type: str  :default: "quick"
    suite = variable(str, value="quick")
    #: Benchmarks to run (empty: the whole suite).
    #: :type: List[str]  :default: []
    only = variable(typ.List[str], value=[])
    #: Worker pairs (None: the suite's default).
    #: :type: int or None  :default: None
    pairs = variable(int, type(None), value=None)
    #: A worker silent this long (seconds) is taken as hung.
    #: :type: float  :default: 300.0
    worker_timeout_s = variable(float, value=300.0)
    #: An A/A check on purpose: target and reference may load the same torch
    #: (`--allow-same-torch`); otherwise such a run stops before measuring.
    #: :type: bool  :default: False
    allow_same_torch = variable(bool, value=False)
    #: Command that runs eb-torchperf in the job.
    #: :type: str  :default: ReFrame's interpreter with -m eb_torchperf.cli
    launcher = variable(str, value=" ".join(shlex.quote(w) for w in default_launcher()))

    @run_before("run")
    def set_audit_command(self):
        """Executable and options of `eb-torchperf audit`, writing RESULTS_NAME."""
        spec = AuditSpec(tuple(launcher_words(self.launcher)), self.reference_python,
                         self.suite, tuple(self.only), self.pairs, self.worker_timeout_s,
                         self.allow_same_torch)
        words = spec.argv(self.target_python, RESULTS_NAME)  # the fleet's command line
        self.executable = shlex.quote(words[0])
        self.executable_opts = [shlex.quote(word) for word in words[1:]]

    def _analysed(self):
        """(results, their analysis), analysed once per check (None, None: no file)."""
        if getattr(self, "_analysis_cache", None) is None:
            self._analysis_cache = analysed_results(os.path.join(self.stagedir, RESULTS_NAME))
        return self._analysis_cache

    @sanity_function
    def assert_audit_completed(self):
        """The audit completed, measured something, and found no error."""
        problems = sanity_problems(*self._analysed())
        return sn.assert_false(problems, msg="; ".join(problems))

    @run_before("performance")
    def set_perf_variables(self):
        """One performance variable per metric of the results (names known only now)."""
        self.perf_variables = {
            metric.name: sn.make_performance_function(_value, metric.unit, metric.value)
            for metric in perf_metrics(self._analysed()[1])}
