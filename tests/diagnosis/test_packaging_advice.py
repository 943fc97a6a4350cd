"""Remedies phrased for the target's packaging system (issue 13 item 5): the probe's
install detection, and the (rule, packaging) advice table applied by the diagnosis."""

import os

import pytest

from testdata import diagnose
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import AuditResult, ProbeResult
from eb_torchperf.diagnosis.packaging_advice import FIRST_LINE, advise
from eb_torchperf.probe.install_kind import detect
from eb_torchperf.measure.runner import run_probe



def _torch_under(root, *parts):
    folder = root.joinpath(*parts, "torch")
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    return str(folder / "__init__.py")


def test_easybuild_install_is_found_by_its_easyconfig_or_ebroot(tmp_path):
    root = tmp_path / "software" / "PyTorch" / "2.9.1-foss-2025a"
    torch_file = _torch_under(root, "lib", "python3.12", "site-packages")
    (root / "easybuild").mkdir()
    (root / "easybuild" / "PyTorch-2.9.1-foss-2025a.eb").write_text("")
    found = detect(torch_file, environ={}, prefix="/usr")
    assert (found["kind"], found["root"]) == ("easybuild", str(root))
    assert detect(torch_file, environ={"EBROOTPYTORCH": str(root)}, prefix="/usr") == {
        "kind": "easybuild", "root": str(root), "evidence": "$EBROOTPYTORCH"}


@pytest.mark.parametrize("marker,kind", [(".spack", "spack"), ("conda-meta", "conda")])
def test_spack_and_conda_prefixes(tmp_path, marker, kind):
    torch_file = _torch_under(tmp_path, "lib", "python3.11", "site-packages")
    (tmp_path / marker).mkdir()
    assert detect(torch_file, environ={}, prefix="/usr") == {
        "kind": kind, "root": str(tmp_path), "evidence": "%s/%s" % (tmp_path, marker)}


def test_venv_and_plain_pip(tmp_path):
    torch_file = _torch_under(tmp_path, "lib", "python3.11", "site-packages")
    assert detect(torch_file, environ={}, prefix=str(tmp_path))["kind"] == "pip"
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert detect(torch_file, environ={}, prefix=str(tmp_path)) == {
        "kind": "venv", "root": str(tmp_path), "evidence": str(tmp_path / "pyvenv.cfg")}


def test_probe_of_debians_torch_says_debian(debian_python):
    install = run_probe(debian_python)["install"]
    assert install["kind"] == "debian"
    assert install["root"] == "/usr/lib/python3/dist-packages"


def _finding(rule_id):
    return Finding(rule_id, "error", "BLAS is not MKL", {}, "Add imkl to the easyconfig.", "u")


def test_debian_blas_advice_starts_with_update_alternatives_and_keeps_easybuilds():
    advice = advise(_finding("blas-not-mkl"), "debian").advice
    first, details = advice.split("\n")
    assert first.startswith("`apt-get install libopenblas0-openmp`, then select it with "
                            "`update-alternatives --config")
    assert details.startswith("Debian/Ubuntu's python3-torch calls the system libblas.so.3: ")
    assert advice.endswith(" EasyBuild: Add imkl to the easyconfig.")
    assert "spack install py-torch ^intel-oneapi-mkl" in advise(_finding("blas-not-mkl"),
                                                                "spack").advice
    assert "libblas=*=*mkl" in advise(_finding("blas-not-mkl"), "conda").advice


def test_easybuild_unknown_kinds_and_rules_without_entry_keep_the_easybuild_advice():
    first = FIRST_LINE[("blas-not-mkl", "easybuild")]
    for kind in ("easybuild", None):
        assert advise(_finding("blas-not-mkl"), kind).advice == (
            first + "\nAdd imkl to the easyconfig.")
    assert advise(_finding("blas-not-mkl"), "unknown").advice == "Add imkl to the easyconfig."
    assert advise(_finding("governor-powersave"), "debian").advice == "Add imkl to the easyconfig."


def test_diagnose_phrases_the_remedy_for_the_targets_packaging():
    facts = {"torch": {"version": "1.13.0a0"}, "install": {"kind": "debian"}}
    target = ProbeResult.from_facts("target", "/usr/bin/python3", facts)
    result = AuditResult(suite="quick", options={}, target=target, reference=None,
                         results=(), skipped=(), errors=(), complete=True, wall_s=0.0,
                         created_utc="", host="")
    rule = lambda t, r, c: [_finding("blas-not-mkl")]  # noqa: E731
    (finding,) = diagnose(result, [], rules=[rule])
    assert finding.advice.startswith(FIRST_LINE[("blas-not-mkl", "debian")] + "\n")
