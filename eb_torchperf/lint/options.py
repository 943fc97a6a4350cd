"""What a lint run is for: target architecture, site facts, and what to check.

Stdlib only; validated on creation so the rules can trust it.  Settings also come from
`EB_TORCHPERF_*` environment variables (the hook cannot take options).
"""

import dataclasses
import os
import platform
import re
from typing import Mapping, Optional, Tuple

from eb_torchperf.errors import ConfigError

#: CPU architectures EasyBuild knows as values of the ARCH constant
#: (easybuild/tools/systemtools.py, KNOWN_ARCH_CONSTANTS).
KNOWN_ARCHS = ("aarch64", "ppc64le", "riscv64", "x86_64")
#: "1" / "true" / "yes": the site builds once for nodes of several CPU types.
ENV_HETEROGENEOUS = "EB_TORCHPERF_HETEROGENEOUS"
#: Comma-separated compute capabilities of the site's GPUs, e.g. "8.0,9.0".
ENV_SITE_GPUS = "EB_TORCHPERF_SITE_GPUS"
#: Compute capability "major.minor", optionally with NVIDIA's arch-specific "a" or
#: family "f" suffix (e.g. "9.0a", "10.0f"; CUDA programming guide, "Compute Capability"),
#: and PyTorch's "+PTX" (TORCH_CUDA_ARCH_LIST: also embed PTX for newer GPUs).
_CAPABILITY = re.compile(r"^(\d+)\.(\d+)([af]?)(\+PTX)?$")
_TRUE_WORDS = ("1", "true", "yes", "on")


def host_arch() -> str:
    """The host's architecture as EasyBuild names it (macOS "arm64" is "aarch64")."""
    machine = platform.machine()
    return "aarch64" if machine == "arm64" else machine


def parse_capabilities(text: str, what: str) -> Tuple[str, ...]:
    """Split "8.0,9.0" into ("8.0", "9.0"), validating each entry.

    Args:
        text: comma-separated compute capabilities (spaces allowed).
        what: name of the option or variable, for the error message.

    Raises:
        ConfigError: an entry is not "major.minor" (with optional a/f suffix).
    """
    values = tuple(item.strip() for item in text.split(",") if item.strip())
    for value in values:
        if not _CAPABILITY.match(value):
            raise ConfigError("%s: %r is not a CUDA compute capability such as 8.0 or 9.0a"
                              % (what, value))
    return values


def capability_key(value: str) -> Tuple[int, int, str, bool]:
    """(major, minor, "a"/"f"/"" suffix, has +PTX) of a compute capability string.

    Raises:
        ValueError: `value` is not a compute capability.
    """
    match = _CAPABILITY.match(str(value).strip())
    if not match:
        raise ValueError("not a compute capability: %r" % value)
    return int(match.group(1)), int(match.group(2)), match.group(3), bool(match.group(4))


@dataclasses.dataclass(frozen=True)
class LintOptions:
    """Settings of one lint run.

    Attributes:
        arch: target CPU architecture (one of KNOWN_ARCHS); default the host's.
        heterogeneous: the site builds once for several CPU types (makes host-tied
            `-march=native` binaries a warning rather than info).
        cuda_compute_capabilities: what `eb --cuda-compute-capabilities` will be given;
            None means "whatever the EasyBuild configuration says".
        site_gpus: compute capabilities of the site's GPUs, () when not configured.
        check_dependencies: report dependencies with no easyconfig in the robot path.
    """

    arch: str = dataclasses.field(default_factory=host_arch)
    heterogeneous: bool = False
    cuda_compute_capabilities: Optional[Tuple[str, ...]] = None
    site_gpus: Tuple[str, ...] = ()
    check_dependencies: bool = True

    def __post_init__(self):
        if self.arch not in KNOWN_ARCHS:
            raise ConfigError("unknown target architecture %r (choose from %s)"
                              % (self.arch, ", ".join(KNOWN_ARCHS)))
        for value in tuple(self.cuda_compute_capabilities or ()) + tuple(self.site_gpus):
            parse_capabilities(value, "compute capability")

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None, **overrides) -> "LintOptions":
        """Options from EB_TORCHPERF_* variables, with keyword `overrides` winning.

        Raises:
            ConfigError: a variable or override has an invalid value.
        """
        environ = os.environ if environ is None else environ
        values = {
            "heterogeneous": environ.get(ENV_HETEROGENEOUS, "").strip().lower() in _TRUE_WORDS,
            "site_gpus": parse_capabilities(environ.get(ENV_SITE_GPUS, ""), ENV_SITE_GPUS),
        }
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)
