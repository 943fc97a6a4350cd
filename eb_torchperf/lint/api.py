"""Library entry points of the easyconfig linter.

- `lint_paths(paths, ...)`: files and directories, for the CLI and scripts; one
  `FileResult` per easyconfig, with either findings or a one-line problem.
- `lint_easyconfig_object(ec, ...)`: an `EasyConfig` EasyBuild already made, for an
  EasyBuild hook; returns findings.

EasyBuild is imported only when these run, so this module imports without it.
"""

import dataclasses
import fnmatch
import os
import sys
from typing import Iterable, List, Optional, Sequence, Tuple

from eb_torchperf.errors import ConfigError
from eb_torchperf.records.findings import EXIT_ERROR, Finding, exit_status
from eb_torchperf.lint.options import LintOptions
from eb_torchperf.lint.rules import lint_facts

#: Exit status when some input could not be linted (usage/tool error, like bad options).
EXIT_INPUT_PROBLEM = EXIT_ERROR
DEFAULT_PATTERN = "*.eb"


@dataclasses.dataclass(frozen=True)
class FileResult:
    """The lint result of one file.

    Attributes:
        path: the easyconfig path as given or found.
        findings: findings, most severe first; () when `problem` is set.
        problem: one line saying why the file could not be linted, else None.
    """

    path: str
    findings: Tuple[Finding, ...] = ()
    problem: Optional[str] = None

    def to_json(self) -> dict:
        """JSON-ready dict: path, problem, findings (Finding.to_json each)."""
        return {"path": self.path, "problem": self.problem,
                "findings": [f.to_json() for f in self.findings]}


def _import_easybuild():
    """Import the EasyBuild-backed modules.

    Raises:
        ConfigError: easybuild-framework is not installed.
    """
    try:
        from eb_torchperf.lint import ebsetup, parse, resolve
    except ImportError as err:
        raise ConfigError("eb-torchperf lint needs EasyBuild (pip install easybuild-framework "
                          "easybuild-easyblocks easybuild-easyconfigs): %s" % err) from None
    return ebsetup, parse, resolve


def collection_easyconfigs() -> Tuple[str, List[str]]:
    """The installed easybuild-easyconfigs collection of this Python and its PyTorch files.

    Returns:
        (label "easybuild-easyconfigs 5.4.1 at <folder>", every PyTorch-*.eb below the
        folder, sorted).

    Raises:
        ConfigError: easybuild-easyconfigs is not installed for this interpreter.
    """
    from eb_torchperf.lint.collection import (DISTRIBUTION, collection_version,
                                              find_collection, pytorch_easyconfigs)
    root = find_collection()
    if not root:
        raise ConfigError("%s is not installed for %s: pip install %s==<your EasyBuild "
                          "version> (or `module load EasyBuild`), or give the easyconfigs "
                          "folder instead of --collection"
                          % (DISTRIBUTION, sys.executable, DISTRIBUTION))
    return "%s %s at %s" % (DISTRIBUTION, collection_version() or "?", root), \
        pytorch_easyconfigs(root)


def find_easyconfigs(paths: Iterable[str], pattern: str = DEFAULT_PATTERN) -> List[str]:
    """Expand directories into the files below them matching `pattern`, sorted.

    Files are kept as given whatever their name; paths that do not exist are kept too,
    so they are reported as problems.
    """
    found: List[str] = []
    for path in paths:
        if not os.path.isdir(path):
            found.append(path)
            continue
        for root, dirs, files in os.walk(path):
            dirs.sort()
            found.extend(os.path.join(root, name) for name in sorted(files)
                         if fnmatch.fnmatch(name, pattern))
    return found


def _options(options: Optional[LintOptions], opts: dict) -> LintOptions:
    if options is not None and opts:
        raise TypeError("pass either options or keyword options, not both")
    return options if options is not None else LintOptions.from_env(**opts)


def lint_paths(paths: Sequence[str], options: Optional[LintOptions] = None,
               robot_paths: Sequence[str] = (), pattern: str = DEFAULT_PATTERN,
               isolate: bool = False, timeout_s: float = 120.0, allow_root: bool = False,
               **opts) -> List[FileResult]:
    """Lint easyconfig files, and every file matching `pattern` below directories.

    Args:
        paths: files and directories.
        options: lint settings; when None, built from EB_TORCHPERF_* variables and
            `opts` (LintOptions fields, e.g. arch="aarch64").
        robot_paths: extra directories for dependency and toolchain easyconfigs.
        pattern: file name pattern for directories.
        isolate: parse each file in a separate, time-bounded child process with the
            least privilege available (lint/sandbox.py; the CLI always does).  Without
            it, files are parsed in this process: easyconfigs are Python and EasyBuild's
            parser executes them with this process's rights.
        timeout_s: with `isolate`, seconds one file may take before it is killed.
        allow_root: with `isolate` as root, parse as root instead of as `nobody`.

    Returns:
        One FileResult per file, in order; a file that cannot be linted has `problem` set
        and the others are still linted.

    Raises:
        ConfigError: EasyBuild missing or misconfigured, bad options or robot paths.
    """
    options = _options(options, opts)
    ebsetup, parse, resolve = _import_easybuild()
    if isolate:
        return _lint_isolated(find_easyconfigs(paths, pattern), options, robot_paths,
                              timeout_s, allow_root)
    ebsetup.ensure_configured(robot_paths)
    resolver = resolve.Resolver()
    results = []
    for path in find_easyconfigs(paths, pattern):
        try:
            facts = parse.parse_path(path, options.arch, options.check_dependencies, resolver)
        except parse.EasyconfigError as err:
            results.append(FileResult(path, problem=err.reason))
            continue
        except (UnicodeDecodeError, ValueError) as err:  # a binary or non-UTF-8 file
            results.append(FileResult(path, problem="cannot parse: %s: %s"
                                      % (type(err).__name__, err)))
            continue
        results.append(FileResult(path, lint_facts(facts, options)))
    return results


def _lint_isolated(paths: Sequence[str], options: LintOptions, robot_paths: Sequence[str],
                   timeout_s: float, allow_root: bool) -> List[FileResult]:
    """lint_paths with the files parsed in the sandbox (lint/sandbox.py); the rules run
    here, on the facts the sandbox gives back."""
    from eb_torchperf.errors import SchemaError
    from eb_torchperf.lint import sandbox
    from eb_torchperf.lint.facts_json import facts_from_json
    sandbox.check_timeout(timeout_s)
    for path in robot_paths:  # checked here: the sandbox's errors are per file
        if not os.path.isdir(path):
            raise ConfigError("robot path %r is not a directory" % path)
    if allow_root:
        ebsetup = _import_easybuild()[0]
        os.environ[ebsetup.ALLOW_ROOT_ENV] = "1"
    readable = [path for path in paths if os.path.isfile(path)]
    replies = dict(zip(readable, sandbox.parse_files(
        readable, "lint", options.arch, options.check_dependencies, robot_paths, timeout_s,
        allow_root)))
    results = []
    for path in paths:
        reply, facts = replies.get(path, {"problem": "no such file"}), None
        try:
            facts = facts_from_json(reply["facts"]) if "facts" in reply else None
        except SchemaError as err:
            reply = {"problem": "the parser gave an unreadable result (%s)" % err}
        if facts is None:
            results.append(FileResult(path, problem=" ".join(str(reply.get(
                "problem") or "the parser gave no result").split())))
        else:
            results.append(FileResult(path, lint_facts(facts, options)))
    return results


def lint_easyconfig_object(ec, options: Optional[LintOptions] = None, **opts) -> List[Finding]:
    """Lint an EasyConfig instance made by EasyBuild (for EasyBuild hooks).

    Works on a fully parsed easyconfig and inside a `parse_hook` (dependencies are
    parsed here then; templates that need later values stay unresolved in evidence).
    Uses EasyBuild's configuration as it is (inside `eb` it exists; elsewhere call
    `ebsetup.ensure_configured()` first).  Dependency easyconfigs are not looked up
    unless `check_dependencies=True` is passed: inside `eb`, `--robot` does that.

    Args:
        ec: easybuild.framework.easyconfig.easyconfig.EasyConfig.
        options: lint settings; when None, from EB_TORCHPERF_* variables and `opts`.

    Returns:
        Findings, most severe first.

    Raises:
        ConfigError: bad options; parse.EasyconfigError (a ConfigError) when EasyBuild
            cannot evaluate the easyconfig.
    """
    if options is None:
        opts.setdefault("check_dependencies", False)
    options = _options(options, opts)
    ebsetup, parse, resolve = _import_easybuild()
    try:
        facts = parse.facts_from_easyconfig(ec, options.arch, options.check_dependencies)
    except ebsetup.EasyBuildError as err:  # re-exported there from easybuild.tools.build_log
        raise parse.EasyconfigError(ec.path or ec.name, ebsetup.one_line(err.msg)) from None
    return list(lint_facts(facts, options))


def exit_status_for(results: Sequence[FileResult], fail_on: str = "error") -> int:
    """EXIT_INPUT_PROBLEM when a file could not be linted, else findings.exit_status."""
    if any(result.problem for result in results):
        return EXIT_INPUT_PROBLEM
    return exit_status((f for result in results for f in result.findings), fail_on)
