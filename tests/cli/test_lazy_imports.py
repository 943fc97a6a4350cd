"""`eb-torchperf --help` and `import eb_torchperf` stay light: no sub-command is
imported before it is chosen, and the package itself needs only the standard library."""

import subprocess
import sys

import pytest

from eb_torchperf.cli.dispatch import COMMANDS, chosen_command

HEAVY = ("pandas", "jinja2", "rich", "torch", "numpy", "easybuild")
REPORT_HEAVY = "print(sorted(m for m in %r if m in sys.modules))" % (HEAVY,)


def _loaded_after(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", "import sys\n" + code + "\n" + REPORT_HEAVY],
                          capture_output=True, text=True, check=True)
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["nosuch"]])
def test_top_level_parser_imports_no_sub_command(argv):
    code = ("from eb_torchperf.cli.dispatch import main\ntry:\n    main(%r)\n"
            "except SystemExit:\n    pass" % (argv,))
    assert _loaded_after(code) == "[]"


def test_help_lists_every_command_from_the_table():
    proc = subprocess.run([sys.executable, "-m", "eb_torchperf.cli", "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    for name, (_, help_text) in COMMANDS.items():
        assert name in proc.stdout
    assert "exit status" in proc.stdout


def test_a_chosen_command_imports_only_its_module():
    code = ("from eb_torchperf.cli.dispatch import main\ntry:\n    main(['lint', '--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('eb_torchperf.cli.')))")
    proc = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True,
                          text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == ("['eb_torchperf.cli.dispatch', "
                                                    "'eb_torchperf.cli.lint']")


def test_importing_the_package_loads_only_the_standard_library():
    code = ("before = set(sys.modules)\nimport eb_torchperf\n"
            "new = sorted(m.split('.')[0] for m in set(sys.modules) - before)\n"
            "print(sorted(set(new) - set(sys.stdlib_module_names)))")
    proc = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True,
                          text=True, check=True)
    assert proc.stdout.strip() == "['eb_torchperf']"


@pytest.mark.parametrize("argv, chosen", [
    (["audit", "--python", "x"], ("audit",)), (["--help"], ()), ([], ()),
    (["nosuch", "audit"], ()), (["--", "audit"], ())])
def test_chosen_command(argv, chosen):
    assert chosen_command(argv) == chosen
