"""Known build settings of upstream PyTorch wheels, bundled with eb_torchperf.

An audit without a reference interpreter still needs to know what "normal" is: the
upstream x86-64 wheels link MKL, enable oneDNN and OpenMP, build without MPI and
without `-march`, and select a known CPU capability.  The data file
(`data/wheel_configs.json`) holds those settings by torch version and platform,
each entry read from a real `torch.__config__.show()` text named in its `source`.
"""

import dataclasses
import json
import pathlib
from typing import Optional, Tuple

from packaging.version import InvalidVersion, Version

DATA_FILE = pathlib.Path(__file__).parent / "data" / "wheel_configs.json"
#: `platform.machine()` -> platform key of the data file.
PLATFORMS = {"x86_64": "linux-x86_64", "AMD64": "linux-x86_64"}


@dataclasses.dataclass(frozen=True)
class WheelConfig:
    """Build settings of one upstream wheel (one torch minor version, one platform).

    Attributes:
        torch: "major.minor" the entry describes.
        platform: e.g. "linux-x86_64".
        source: key of the source text; source_text: where it was read.
        blas_info, lapack_info: `BLAS_INFO` / `LAPACK_INFO` build settings.
        use_mkl, use_mkldnn, use_openmp, use_mpi: build switches.
        mkl_version, onednn_version, compiler, build_type, opt_level, march: as printed.
        cpu_capability_on_avx512: capability the wheel selects on an AVX512 CPU.
        parallel_backend: "ATen parallel backend" of parallel_info().
        exact: False when no entry of the requested minor version exists and the
            nearest known version stands in.
    """

    torch: str
    platform: str
    source: str
    source_text: str
    blas_info: str
    lapack_info: str
    use_mkl: bool
    mkl_version: str
    use_mkldnn: bool
    onednn_version: str
    use_openmp: bool
    use_mpi: bool
    build_type: str
    opt_level: str
    march: Optional[str]
    compiler: str
    cpu_capability_on_avx512: str
    parallel_backend: str
    exact: bool = True

    @property
    def label(self) -> str:
        """"upstream wheel torch 2.13 (linux-x86_64)", marked when only the nearest."""
        text = "upstream wheel torch %s (%s)" % (self.torch, self.platform)
        return text if self.exact else text + ", nearest known version"


def load_wheel_configs(path=DATA_FILE) -> Tuple[WheelConfig, ...]:
    """Read the bundled data file.

    Raises:
        OSError, ValueError, KeyError: the file is missing or malformed (a packaging bug).
    """
    data = json.loads(pathlib.Path(path).read_text())
    return tuple(WheelConfig(source_text=data["sources"][entry["source"]], **entry)
                 for entry in data["wheels"])


def minor_version(version: Optional[str]) -> Optional[Tuple[int, int]]:
    """(major, minor) of a torch version string ("1.13.0a0" -> (1, 13)); None if unparsable."""
    try:
        release = Version(version or "").release
    except InvalidVersion:
        return None
    return (release + (0,))[:2] if release else None


def wheel_config_for(torch_version: Optional[str], machine: Optional[str],
                     configs: Optional[Tuple[WheelConfig, ...]] = None) -> Optional[WheelConfig]:
    """The upstream wheel settings for this torch version and machine.

    Args:
        torch_version: `torch.__version__` of the target.
        machine: `platform.machine()` of the target host.
        configs: entries to search (default: the bundled file).

    Returns:
        The entry of the same minor version, else the nearest known version of the
        platform with `exact=False`; None for an unknown platform or version.
    """
    wanted = minor_version(torch_version)
    platform_key = PLATFORMS.get(machine or "")
    if wanted is None or platform_key is None:
        return None
    candidates = [c for c in (configs or load_wheel_configs()) if c.platform == platform_key]
    if not candidates:
        return None
    exact = [c for c in candidates if minor_version(c.torch) == wanted]
    if exact:
        return exact[0]
    nearest = min(candidates, key=lambda c: _distance(minor_version(c.torch), wanted))
    return dataclasses.replace(nearest, exact=False)


def _distance(a: Tuple[int, int], b: Tuple[int, int]) -> Tuple[int, int]:
    return abs(a[0] - b[0]), abs(a[1] - b[1])
