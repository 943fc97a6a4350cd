"""Real `eb` runs of the hook (issue 5): install, fail mode, --sanity-check-only,
entry points beside a site hooks file, a site hooks file calling ours, the eb_torchperf
module and `eb-torchperf sanity-check`.  Run times are printed at the end of pytest."""

import importlib.util
import json
import os
import re
import shutil
import sys

import pytest

from ebsite import HOOKS_FILE, MEASUREMENT_RULES, TORCH_EC, undecided as _busy


VERSION = "2.13.0-wheel"
REPORT_SUBDIR = os.path.join("easybuild", "torchperf")


def _read_json(path):
    with open(path) as handle:
        return json.load(handle)


def _report_dir(site, version=VERSION):
    return site.installdir("PyTorch", version) / REPORT_SUBDIR


def _variant(site, suffix, extra):
    """The wheel easyconfig with another versionsuffix and extra lines, in the temp site."""
    text = TORCH_EC.read_text().replace("versionsuffix = '-wheel'", "versionsuffix = '%s'" % suffix)
    path = site.root / ("PyTorch-2.13.0%s.eb" % suffix)
    path.write_text(text + "\n" + extra + "\n")
    return path


def _clean_or_busy(site, stdout, version=VERSION) -> None:
    """An A/A verdict: clean, or (busy host) a warning made of measurement findings."""
    folder = _report_dir(site, version)
    verdict = _read_json(folder / "verdict.json")
    if _busy(_read_json(folder / "torchperf.json")):
        assert verdict["status"] == "warning", verdict["summary"]
        assert re.search(r"== eb_torchperf: (UNDECIDED|WARNING): ", stdout), stdout[-3000:]
    else:
        assert verdict["status"] == "ok", verdict["summary"]
        assert stdout.count("== eb_torchperf: clean: ") == 1, stdout[-3000:]


def _module_state(site):
    path = site.module_file("PyTorch", VERSION)
    return path.read_bytes(), path.stat().st_mtime_ns


def test_install_warn_mode_writes_reports_and_module(eb_site, good_install):
    assert good_install.returncode == 0, good_install.stdout[-3000:]
    assert eb_site.module_file("PyTorch", VERSION).is_file()
    folder = _report_dir(eb_site)
    verdict = _read_json(folder / "verdict.json")
    results = _read_json(folder / "torchperf.json")
    # on a busy build host the audit says so (issue 26): host-busy / measurement-undecided
    # warnings, and an undecided audit never reads "clean"
    busy = any(f["rule_id"] in ("host-busy", "measurement-undecided")
               for f in results.get("findings", []))
    assert verdict["status"] == ("warning" if busy else "ok"), verdict["summary"]
    assert verdict["summary"].startswith(("WARNING: ", "UNDECIDED: ") if busy else
                                         ("clean: ", "UNDECIDED: "))
    assert [r["bench"] for r in results["results"]] == ["matmul_fp32"] * 6  # 3 pairs, 2 sides
    installdir = str(eb_site.installdir("PyTorch", VERSION))
    assert results["target"]["facts"]["torch"]["file"].startswith(installdir + os.sep)
    assert not results["reference"]["facts"]["torch"]["file"].startswith(installdir)
    # three worker pairs (TINY_AUDIT): the row may be answered or left inconclusive
    assert re.search(r"== eb_torchperf: (clean|UNDECIDED|WARNING): (geomean relative OPS|"
                     r"relative OPS inconclusive|\d finding)", good_install.stdout)
    assert "== eb_torchperf: report: %s" % folder in good_install.stdout.replace("\n", "")
    assert {"torchperf.html", "torchperf.md"} <= set(os.listdir(folder))


def test_parse_hook_reports_once_per_easyconfig(good_install):
    lines = re.findall(r"== eb_torchperf: (?:easyconfig check skipped for \S+|PyTorch-2\.13\.0-"
                       r"wheel\.eb: easyconfig check clean)", good_install.stdout)
    if importlib.util.find_spec("eb_torchperf.lint"):
        lines += re.findall(r"== eb_torchperf: PyTorch-2\.13\.0-wheel\.eb: \[", good_install.stdout)
    assert lines, good_install.stdout[:3000]
    assert len(set(lines)) == len(lines)


def test_bad_module_env_fails_on_finding_without_module(eb_site, good_install):
    # ATEN_CPU_CAPABILITY=default in the module forces scalar ATen kernels on an AVX2/
    # AVX512 CPU: the cpu-capability-low rule flags it (a warning when forced), and the
    # site policy fails at warning level.  (An oversubscribing OMP_NUM_THREADS cannot be
    # used here: torch 2.13 clamps intra-op threads to the allowed cores.)
    path = _variant(eb_site, "-wheel-badenv", "modextravars = {'ATEN_CPU_CAPABILITY': 'default'}")
    proc = eb_site.eb("install, bad env, fail mode", "--hooks=%s" % HOOKS_FILE, path,
                      EB_TORCHPERF_MODE="fail", EB_TORCHPERF_LINT="warn",
                      EB_TORCHPERF_FAIL_LEVEL="warning")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert not eb_site.module_file("PyTorch", "2.13.0-wheel-badenv").exists()
    verdict = _read_json(_report_dir(eb_site, "2.13.0-wheel-badenv") / "verdict.json")
    assert verdict["status"] == "fail" and verdict["blocking"], verdict
    assert all(f["severity"] in ("warning", "error") for f in verdict["blocking"])
    capability = [f for f in verdict["blocking"] if f["rule_id"] == "cpu-capability-low"]
    assert capability and "ATEN_CPU_CAPABILITY" in json.dumps(capability[0]), verdict["blocking"]
    first = verdict["blocking"][0]
    printed = proc.stdout.replace("\n", " ").replace("  ", " ")
    named = "[%s] %s: " % (first["severity"], first["rule_id"])
    if any(f["rule_id"] in MEASUREMENT_RULES for f in verdict["blocking"]):
        # busy host: the line may first say that no row decided, then the findings
        assert "eb_torchperf: PyTorch 2.13.0: FAIL: " in printed
        assert first["rule_id"] in MEASUREMENT_RULES or named in printed
    else:
        assert "eb_torchperf: PyTorch 2.13.0: FAIL: " + named in printed


def test_fail_mode_below_minimum_stops_before_module(eb_site, good_install):
    path = _variant(eb_site, "-wheel-gate", "")
    proc = eb_site.eb("install, fail mode, minimum 1000 %", "--hooks=%s" % HOOKS_FILE, path,
                      EB_TORCHPERF_MODE="fail", EB_TORCHPERF_LINT="warn",
                      EB_TORCHPERF_MIN_RELATIVE_OPS="1000")
    assert proc.returncode != 0
    assert not eb_site.module_file("PyTorch", "2.13.0-wheel-gate").exists()
    text = " ".join(proc.stdout.split())
    assert re.search(r"ERROR: Installation of PyTorch-2\.13\.0-wheel-gate\.eb failed: eb_torchperf: "
                     r"PyTorch 2\.13\.0: FAIL: .*(\(minimum 1000 %\)|minimum not shown), BELOW MINIMUM; "
                     r"report: \S+"
                     r"torchperf\.(json|html)", text), text[-2000:]


def test_sanity_check_only_reaudits_and_keeps_module(eb_site, good_install):
    before = _module_state(eb_site)
    first = _read_json(_report_dir(eb_site) / "torchperf.json")["created_utc"]
    proc = eb_site.eb("--sanity-check-only, warn", "--hooks=%s" % HOOKS_FILE, "--sanity-check-only",
                      TORCH_EC, EB_TORCHPERF_MODE="warn")
    assert proc.returncode == 0, proc.stdout[-3000:]
    # a one-pair re-audit in warn mode: whatever it reads (test_install_warn_mode_writes_
    # reports_and_module checks the A/A verdict), it writes one and keeps the module
    verdict = _read_json(_report_dir(eb_site) / "verdict.json")
    assert verdict["status"] in ("ok", "warning"), verdict["summary"]
    assert re.search(r"== eb_torchperf: (clean|UNDECIDED|WARNING): ", proc.stdout), proc.stdout[-3000:]
    assert _read_json(_report_dir(eb_site) / "torchperf.json")["created_utc"] >= first
    assert _module_state(eb_site) == before
    failed = eb_site.eb("--sanity-check-only, fail", "--hooks=%s" % HOOKS_FILE,
                        "--sanity-check-only", TORCH_EC, EB_TORCHPERF_MODE="fail",
                        EB_TORCHPERF_LINT="warn", EB_TORCHPERF_MIN_RELATIVE_OPS="1000")
    assert failed.returncode != 0
    assert "BELOW MINIMUM" in failed.stdout
    assert _module_state(eb_site) == before


def _site_hooks(site, body):
    path = site.root / "site_hooks.py"
    path.write_text(body.replace("MARKER", str(site.root / "site-hook-ran")))
    (site.root / "site-hook-ran").unlink(missing_ok=True)
    return path


def test_entry_points_run_beside_a_site_hooks_file(eb_site, good_install):
    hooks = _site_hooks(eb_site, "def parse_hook(ec, *args, **kwargs):\n"
                                 "    open('MARKER', 'w').write(ec.name)\n")
    (_report_dir(eb_site) / "verdict.json").unlink()
    proc = eb_site.eb("--sanity-check-only, entry points", "--use-entrypoints",
                      "--hooks=%s" % hooks, "--sanity-check-only", TORCH_EC)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (eb_site.root / "site-hook-ran").read_text() == "PyTorch"
    _clean_or_busy(eb_site, proc.stdout)


def test_site_hooks_file_calls_ours_in_one_line(eb_site, good_install):
    hooks = _site_hooks(eb_site, "from eb_torchperf import easybuild_hooks as torchperf\n\n"
                                 "def post_sanitycheck_hook(self, *args, **kwargs):\n"
                                 "    torchperf.post_sanitycheck_hook(self, *args, **kwargs)\n"
                                 "    open('MARKER', 'w').write(self.name)\n")
    (_report_dir(eb_site) / "verdict.json").unlink()
    proc = eb_site.eb("--sanity-check-only, site hooks file", "--hooks=%s" % hooks,
                      "--sanity-check-only", TORCH_EC)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (eb_site.root / "site-hook-ran").read_text() == "PyTorch"
    _clean_or_busy(eb_site, proc.stdout)


def test_tool_module_and_sanity_check_command(eb_site, good_install, tool_module, tmp_path):
    assert tool_module.returncode == 0, tool_module.stdout[-3000:]
    tool_root = eb_site.installdir("eb_torchperf", "0.1.0")
    assert ("from eb_torchperf.easybuild.hooks import parse_hook, post_sanitycheck_hook"
            in (tool_root / "hooks" / "torchperf.py").read_text())
    script = ('module load eb_torchperf PyTorch/%s && command -v eb-torchperf && '
              'eb-torchperf sanity-check --reference "$1" --only matmul_fp32 --pairs 3 '
              '--out-dir "$2" "${@:3}"' % VERSION)
    ok = eb_site.shell("sanity-check command", script, sys.executable, str(tmp_path / "ok"))
    results = _read_json(tmp_path / "ok" / "torchperf.json")
    # fail mode: an audit the busy host left undecided is "not shown" (exit 1, issue 26)
    assert ok.returncode == (1 if _busy(results) else 0), ok.stdout
    assert ok.stdout.splitlines()[0] == str(tool_root / "bin" / "eb-torchperf")
    installdir = str(eb_site.installdir("PyTorch", VERSION))
    assert results["target"]["facts"]["torch"]["file"].startswith(installdir + os.sep)
    assert not results["reference"]["facts"]["torch"]["file"].startswith(installdir)
    assert str(tool_root) not in results["target"]["facts"]["env"].get("PYTHONPATH", "")
    failed = eb_site.shell("sanity-check command, minimum 1000 %", script, sys.executable,
                           str(tmp_path / "fail"), "--min-relative-ops", "1000")
    assert failed.returncode == 1, failed.stdout
    assert re.search(r"^torchperf FAIL: .*BELOW MINIMUM$", failed.stdout, re.M)


def _references_to(folder, needles):
    """Files under `folder` (text files up to 1 MB; pyvenv.cfg's `home` is checked apart,
    its `command` line names the creator) that name a needle."""
    hits = []
    for path in folder.rglob("*"):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1 << 20:
            continue
        if path.suffix in (".pyc", ".so") or path.name == "pyvenv.cfg" or \
                "easybuild" in path.relative_to(folder).parts[:1]:
            continue  # EasyBuild's own logs and copies name the build paths, by design
        text = path.read_bytes()
        hits += [str(path) for needle in needles if needle.encode() in text]
    return hits


def test_modules_stand_alone_after_the_clone_is_deleted(eb_site, good_install, tool_module,
                                                        tmp_path):
    # runs last in this file: the clone copy the modules were built from goes away
    assert good_install.returncode == 0 and tool_module.returncode == 0
    shutil.rmtree(eb_site.clone)
    roots = [eb_site.installdir("PyTorch", VERSION), eb_site.installdir("eb_torchperf", "0.1.0")]
    for root in roots:
        home = re.search(r"^home = (.*)$", (root / "pyvenv.cfg").read_text(), re.M).group(1)
        assert os.path.realpath(home) != os.path.realpath(os.path.dirname(sys.executable))
    needles = [str(eb_site.clone), str(TORCH_EC.parents[1]), sys.prefix]
    assert [hit for root in roots for hit in _references_to(root, needles)] == []
    script = ('unset PYTHONPATH EB_PYTHON && module load PyTorch/%s eb_torchperf && cd "$1" && '
              'python-torch-wheel -c "import torch; print(torch.__file__)" && eb --version && '
              'eb-torchperf audit --python python-torch-wheel --reference none --only dispatch '
              '--pairs 1 '
              '--quiet --format md --out audit.json' % VERSION)
    proc = eb_site.shell("modules after the clone is gone", script, str(tmp_path),
                         PATH="/usr/local/bin:/usr/bin:/bin")
    assert proc.returncode in (0, 1), proc.stdout[-3000:]
    assert proc.stdout.splitlines()[0].startswith(str(roots[0]) + os.sep), proc.stdout
    assert "This is EasyBuild 5.4.1" in proc.stdout
    results = _read_json(tmp_path / "audit.json")
    assert results["target"]["facts"]["torch"]["file"].startswith(str(roots[0]) + os.sep)
