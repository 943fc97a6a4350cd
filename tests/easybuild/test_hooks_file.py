"""The hooks file and the entry points, loaded with EasyBuild's own loaders (no `eb` run).

A misspelled hook name in hooks/torchperf.py or eb_torchperf.easybuild.hooks makes
EasyBuild's `load_hooks` / `verify_hooks` raise, so it fails here in CI.
"""

import importlib.metadata
import subprocess
import sys

import pytest

from ebsite import HOOKS_FILE, REPO

hooks = pytest.importorskip("easybuild.tools.hooks", reason="easybuild-framework not installed")
from easybuild.tools.build_log import EasyBuildError  # noqa: E402
from easybuild.tools.entrypoints import EntrypointHook  # noqa: E402

OUR_HOOKS = {"parse_hook", "post_sanitycheck_hook"}


@pytest.fixture(autouse=True)
def fresh_hook_state():
    hooks._cached_hooks.clear()
    EntrypointHook.clear()
    yield
    hooks._cached_hooks.clear()
    EntrypointHook.clear()


def test_hooks_file_defines_only_known_hooks():
    loaded = hooks.load_hooks(str(HOOKS_FILE))
    assert set(loaded) == OUR_HOOKS
    assert loaded["post_sanitycheck_hook"].__module__ == "eb_torchperf.easybuild.hooks"


def test_package_module_defines_only_known_hooks():
    from eb_torchperf.easybuild import hooks as easybuild_hooks
    names = {n for n in dir(easybuild_hooks)
             if n.endswith(hooks.HOOK_SUFF) and callable(getattr(easybuild_hooks, n))}
    assert names == OUR_HOOKS
    hooks.verify_hooks({n: getattr(easybuild_hooks, n) for n in names})


def test_a_misspelled_hook_fails_loading(tmp_path):
    typo = tmp_path / "site_hooks.py"
    typo.write_text("from eb_torchperf.easybuild.hooks import post_sanitycheck_hook as "
                    "post_sanitychek_hook\n")
    with pytest.raises(EasyBuildError, match=r"\* post_sanitychek_hook \(did you mean "
                                             r"'post_sanitycheck_hook'"):
        hooks.load_hooks(str(typo))


def test_site_hooks_file_importing_the_module_adds_no_hook(tmp_path):
    site = tmp_path / "site_hooks.py"
    site.write_text("from eb_torchperf import easybuild_hooks as torchperf\n\n"
                    "def post_sanitycheck_hook(self, *args, **kwargs):\n"
                    "    torchperf.post_sanitycheck_hook(self, *args, **kwargs)\n")
    assert set(hooks.load_hooks(str(site))) == {"post_sanitycheck_hook"}


def test_entry_points_register_valid_hooks():
    points = {ep.name: ep for ep in importlib.metadata.entry_points(group="easybuild.hooks")}
    assert {"torchperf_parse", "torchperf_post_sanitycheck"} <= set(points), \
        "reinstall eb_torchperf (pip install -e .) to refresh its entry points"
    for name in ("torchperf_parse", "torchperf_post_sanitycheck"):
        points[name].load()
    registered = {(ep.name, ep.step, ep.post_step)
                  for ep in EntrypointHook.registered.get(EntrypointHook.group, ())}
    assert {("torchperf_parse", hooks.PARSE, False),
            ("torchperf_post_sanitycheck", hooks.SANITYCHECK_STEP, True)} <= registered


def test_importing_the_hooks_module_registers_no_entry_point():
    code = ("import eb_torchperf.easybuild.hooks\n"
            "from easybuild.tools.entrypoints import EntrypointHook\n"
            "print(len(EntrypointHook.registered.get(EntrypointHook.group, ())))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=str(REPO), timeout=120)
    assert (proc.returncode, proc.stdout.strip()) == (0, "0"), proc.stderr


def test_sanity_check_help_lists_the_variables():
    from eb_torchperf.diagnosis.sitepolicy import POLICY_VARIABLES
    proc = subprocess.run([sys.executable, "-m", "eb_torchperf.cli", "sanity-check", "--help"],
                          capture_output=True, text=True, timeout=120, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr
    for name in POLICY_VARIABLES:
        assert name in proc.stdout
    assert "enhance_sanity_check = True" in proc.stdout
