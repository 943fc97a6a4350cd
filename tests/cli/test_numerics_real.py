"""Issue 30, for real: each mechanism made to happen in a target worker, the audit's
finding and wording, and the EasyBuild hook's default policy.

- a deliberately wrong BLAS: tests/data/numerics/badsgemm.c, an sgemm_ that multiplies
  every other element by 1.5, put before Debian's libblas.so.3 with LD_PRELOAD
  (`--target-env`); Debian's python3-torch calls sgemm_ for fp32 matmul;
- denormals flushed: tests/data/numerics/ftz.c sets FTZ/DAZ at load, as crtfastmath.o
  does for anything linked with -ffast-math; loaded into the wheel's worker.
Both libraries are built here with gcc (skipped without gcc, or off x86-64).
"""

import json
import pathlib
import platform
import shutil
import subprocess

import pytest

from eb_torchperf.cli.dispatch import main
from eb_torchperf.diagnosis import sitepolicy
from eb_torchperf.records.measurements import load_results

SOURCES = pathlib.Path(__file__).parent.parent / "data" / "numerics"


@pytest.fixture(scope="module")
def shims(tmp_path_factory):
    """{"badsgemm": path, "ftz": path} of the built shared libraries."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    if platform.machine() != "x86_64":
        pytest.skip("ftz.c sets the x86 MXCSR register")
    folder = tmp_path_factory.mktemp("shims")
    built = {}
    for name in ("badsgemm", "ftz"):
        built[name] = str(folder / ("lib%s.so" % name))
        subprocess.run([gcc, "-shared", "-fPIC", "-O2", "-o", built[name],
                        str(SOURCES / (name + ".c"))], check=True)
    return built


def _audit(tmp_path, target, reference, only, preload, *extra):
    out = tmp_path / "results.json"
    status = main(["audit", "--python", target, "--reference", reference, "--only", only,
                   "--pairs", "1", "--target-env", "LD_PRELOAD=" + preload, "--out", str(out),
                   "--format", "md", "--quiet", *extra])
    result = load_results(out)
    return status, result, json.loads(out.read_text()), out.with_suffix(".md").read_text()


def _verdict(result):
    from eb_torchperf.present.site_verdict import judge
    from eb_torchperf.workflows.analyse import analyse
    policy = sitepolicy.Policy()
    analysis = analyse(result, keep_findings=True, fail_on=policy.fail_level,
                       minimum=policy.min_relative_ops)
    return judge(analysis.verdict, policy, result.reference is not None)


def test_wrong_blas_is_an_error_that_fails_the_hook_by_default(tmp_path, shims, debian_python,
                                                              wheel_python):
    status, result, data, markdown = _audit(tmp_path, debian_python, wheel_python,
                                            "matmul_fp32", shims["badsgemm"])
    assert status == 1
    [wrong] = [f for f in result.findings if f.rule_id == "numerics-wrong-result"]
    assert wrong.severity == "error"
    assert wrong.title.startswith("Wrong results, likely a wrong kernel: matmul_fp32 n=512 "
                                  "(error 0.")
    assert wrong.evidence["LD_PRELOAD"] == shims["badsgemm"]
    [row] = data["analysis"]["rows"]
    assert row["numerics"]["state"] == "wrong"
    assert row["numerics"]["target"]["norm_rel"] > 0.25  # every other element 1.5x: ~0.35
    assert row["numerics"]["reference"]["norm_rel"] < row["numerics"]["bound"]
    assert "| WRONG 0." in markdown
    verdict = _verdict(result)
    assert sitepolicy.Policy().mode == "warn"
    assert sitepolicy.stops_build(verdict, sitepolicy.Policy())


def test_flushed_denormals_are_a_precision_warning(tmp_path, shims, wheel_python):
    status, result, data, markdown = _audit(tmp_path, wheel_python, wheel_python, "denormal",
                                            shims["ftz"], "--allow-same-torch")
    assert not [f for f in result.findings if f.rule_id == "numerics-wrong-result"]
    [reduced] = [f for f in result.findings if f.rule_id == "numerics-reduced-precision"]
    assert reduced.severity == "warning"
    assert ("likely denormals flushed to zero: denormal numel=16384 values=denormal"
            in reduced.title)
    states = {r["params"]["values"]: r["numerics"]["state"] for r in data["analysis"]["rows"]}
    assert states == {"normal": "agree", "denormal": "reduced-precision"}
    assert "| REDUCED 1 vs " in markdown
    assert not sitepolicy.stops_build(_verdict(result), sitepolicy.Policy())
