"""A remedy opens with one line for the kind of installation audited (issue 25):
diagnosis.packaging_advice.FIRST_LINE, shown first by present.findings_view."""

import json

from eb_torchperf.present.findings_view import finding_view
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.workflows.analyse import analyse

from auditcases import DATA

#: A real audit of Debian's python3-torch (facts "install": kind "debian").
DEBIAN = DATA / "results-debian-vs-venv-v2.json"


def _remedies(kind):
    data = json.loads(DEBIAN.read_text())
    data["target"]["facts"]["install"]["kind"] = kind
    findings = analyse(AuditResult.from_json(data)).findings
    return {f.rule_id: finding_view(f) for f in findings}


def test_debian_package_opens_with_the_apt_command_once():
    blas = _remedies("debian")["blas-not-mkl"]
    assert blas["remedy"] == ("`apt-get install libopenblas0-openmp`, then select it with "
                              "`update-alternatives --config libblas.so.3-x86_64-linux-gnu`.")
    assert "update-alternatives" not in blas["remedy_details"]
    assert blas["remedy_details"].startswith("Debian/Ubuntu's python3-torch calls")


def test_easybuild_module_opens_with_the_rebuild():
    remedies = _remedies("easybuild")
    assert remedies["blas-not-mkl"]["remedy"] == (
        "Rebuild the module with imkl in the easyconfig's dependencies (BLAS=MKL).")
    assert remedies["blas-not-mkl"]["remedy_details"].startswith("Build PyTorch against MKL")
    assert "Debian" not in remedies["mkl-missing"]["advice"]
    assert remedies["mkl-missing"]["remedy"] == (
        "Rebuild the module with imkl in the easyconfig's dependencies.")


def test_a_rule_without_a_line_keeps_its_first_sentence():
    threads = _remedies("debian")["threads-vs-cores"]
    assert "\n" not in threads["advice"] and threads["advice"].startswith(threads["remedy"])
