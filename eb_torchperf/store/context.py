"""What a stored audit is of: the build, the node type, and where it came from.

The results document names the interpreters, the host and the CPU; the build's name,
toolchain and the node type come from whoever ran the audit:
- the EasyBuild hook: the EasyBlock's name, version, toolchain, versionsuffix, module
  name and easyconfig (`from_easyblock`);
- the CLI and fleet jobs: a loaded EasyBuild module's EBROOTPYTORCH/EBVERSIONPYTORCH
  (its installdir's last folder is "VERSION-TOOLCHAIN[-SUFFIX]", the EasyBuild naming
  scheme: https://docs.easybuild.io/writing-easyconfig-files/#mandatory-parameters),
  else the target's torch version and interpreter path (`from_env`).
The node type is --node-type, else EB_TORCHPERF_NODE_TYPE, else the Slurm partition of
the job (SLURM_JOB_PARTITION), else "" (unknown).
"""

import dataclasses
import os
from typing import Mapping, Optional

#: Environment variable naming the node type of the audits run here.
ENV_NODE_TYPE = "EB_TORCHPERF_NODE_TYPE"
SOFTWARE = "PyTorch"
#: Where an audit was stored from.
SOURCES = ("cli", "hook", "sanity-check", "fleet", "import")


@dataclasses.dataclass(frozen=True)
class BuildContext:
    """The build and place of one audit ("" where unknown).

    Attributes:
        source: one of SOURCES.
        software, version, toolchain: "PyTorch", "2.1.2", "foss-2023a".
        build: the build's name, unique per build ("PyTorch/2.1.2-foss-2023a", or
            "torch 2.13.0 @ /venv/bin/python OMP_NUM_THREADS=1" without EasyBuild).
        easyconfig: the easyconfig file of an EasyBuild build.
        node_type: Slurm partition or site node type name.
        results_path, report_path: the stored JSON and the report a person opens.
    """

    source: str = "cli"
    software: str = SOFTWARE
    version: str = ""
    toolchain: str = ""
    build: str = ""
    easyconfig: str = ""
    node_type: str = ""
    results_path: str = ""
    report_path: str = ""


def node_type_of(explicit: Optional[str] = None,
                 env: Optional[Mapping[str, str]] = None) -> str:
    """--node-type, EB_TORCHPERF_NODE_TYPE, SLURM_JOB_PARTITION, else ""."""
    env = os.environ if env is None else env
    return explicit or env.get(ENV_NODE_TYPE) or env.get("SLURM_JOB_PARTITION") or ""


def _module_build(env: Mapping[str, str]) -> dict:
    """version/toolchain/build of a loaded PyTorch module, {} when none is loaded."""
    root = env.get("EBROOTPYTORCH")
    version = env.get("EBVERSIONPYTORCH")
    if not (root and version):
        return {}
    folder = os.path.basename(os.path.normpath(root))
    rest = folder[len(version) + 1:] if folder.startswith(version + "-") else ""
    return {"version": version, "toolchain": rest,
            "build": "%s/%s" % (SOFTWARE, folder), "easyconfig": ""}


def from_env(source: str = "cli", node_type: Optional[str] = None,
             env: Optional[Mapping[str, str]] = None, **fields) -> BuildContext:
    """The context of an audit run outside EasyBuild (fields left "" are filled from
    the results document when stored: `completed`)."""
    env = os.environ if env is None else env
    values = dict(_module_build(env), source=source, node_type=node_type_of(node_type, env))
    values.update({k: v for k, v in fields.items() if v})
    return BuildContext(**values)


def from_easyblock(block, node_type: Optional[str] = None, source: str = "hook",
                   env: Optional[Mapping[str, str]] = None, **fields) -> BuildContext:
    """The context of an EasyBuild installation (an EasyBlock: name, version,
    toolchain, cfg['versionsuffix'], full_mod_name, cfg.path); missing attributes
    give ""."""
    toolchain = getattr(block, "toolchain", None)
    tc_name = getattr(toolchain, "name", "") or ""
    tc_text = "%s-%s" % (tc_name, getattr(toolchain, "version", "")) if tc_name else ""
    if tc_name == "system":
        tc_text = "system"
    cfg = getattr(block, "cfg", None)
    easyconfig = str(getattr(cfg, "path", "") or "")
    return BuildContext(
        source=source, software=str(getattr(block, "name", SOFTWARE)),
        version=str(getattr(block, "version", "")), toolchain=tc_text,
        build=str(getattr(block, "full_mod_name", "") or ""), easyconfig=easyconfig,
        node_type=node_type_of(node_type, os.environ if env is None else env), **fields)


def completed(context: BuildContext, document: dict) -> BuildContext:
    """`context` with version and build filled from the results document where unknown:
    the target's torch version, and "torch VERSION @ PYTHON [VAR=VALUE ...]" (the
    target's interpreter and run-time environment settings make a build here)."""
    target = document.get("target") or {}
    torch_version = str(((target.get("facts") or {}).get("torch") or {}).get("version") or "")
    env = (document.get("options") or {}).get("target_env") or {}
    settings = " ".join("%s=%s" % (k, "" if v is None else v) for k, v in sorted(env.items()))
    build = context.build or " ".join(
        part for part in ("torch %s @ %s" % (torch_version or "?", target.get("python") or "?"),
                          settings) if part)
    return dataclasses.replace(context, version=context.version or torch_version, build=build)
