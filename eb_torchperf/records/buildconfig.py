"""Parse `torch.__config__.show()` and `torch.__config__.parallel_info()` texts.

The texts are what PyTorch prints about how it was built; they are the only build
record every PyTorch install carries (wheels, EasyBuild, Debian, conda).  The parser
is pure: text in, `BuildConfig` out, and it keeps every line it does not know
(`extra_lines`) and every `Build settings:` key (`settings`) so nothing a future
PyTorch prints is lost.

Format reference: `aten/src/ATen/Version.cpp` (`show_config`) and
`aten/src/ATen/ParallelCommon.cpp` (`get_parallel_info`) in pytorch/pytorch.
"""

import dataclasses
import re
from typing import Dict, Optional, Tuple

TRUE_WORDS = frozenset({"ON", "1", "TRUE", "YES"})
FALSE_WORDS = frozenset({"OFF", "0", "FALSE", "NO", ""})

_SETTINGS_PREFIX = "Build settings:"
# A settings key is upper-case with underscores; values may contain ", " only inside
# flag strings, which never contain "KEY=" right after a comma.
_SETTING_SPLIT = re.compile(r",\s*(?=[A-Z][A-Z0-9_]*=)")
_COMPILER = re.compile(r"^(GCC|clang|Clang|MSVC|Intel|icx|NVHPC)\s+([\w.]+)")
_MKL_LINE = re.compile(r"Math Kernel Library Version\s+([\w.]+)")
_ONEDNN_LINE = re.compile(r"MKL-DNN v([\w.]+)")
_OPENMP_LINE = re.compile(r"^OpenMP (\d+)")
_CAPABILITY_LINE = re.compile(r"^CPU capability usage:\s*(\S+)")
_CUDA_RUNTIME = re.compile(r"^CUDA Runtime ([\d.]+)")
_NVCC_FLAGS = re.compile(r"^NVCC architecture flags:\s*(.*)$")
_CUDNN_LINE = re.compile(r"^CuDNN ([\d.]+)(?:\s+\(built against CUDA ([\d.]+)\))?")
_CUDNN_BUILT_WITH = re.compile(r"^Built with CuDNN ([\d.]+)")
_MAGMA_LINE = re.compile(r"^Magma ([\d.]+)")
_CXX_STD = re.compile(r"^C\+\+ Version:\s*(\d+)")
_SM_CODE = re.compile(r"code=(sm_\d+a?|compute_\d+a?)")
_OPT_LEVEL = re.compile(r"(?:^|\s)-O([0-3sgz]|fast)(?=\s|$)")
_MARCH = re.compile(r"(?:^|\s)-m(arch|cpu|tune)=(\S+)")
_KNOWN_PREFIXES = ("LAPACK is enabled", "NNPACK is enabled", "CUDA", "PyTorch built with")
_PARALLEL_NUM = re.compile(r"^\s*(at::get_num_threads\(\)|at::get_num_interop_threads\(\)|"
                           r"omp_get_max_threads\(\)|mkl_get_max_threads\(\)|"
                           r"std::thread::hardware_concurrency\(\))\s*:\s*(\d+)")
_PARALLEL_BACKEND = re.compile(r"^ATen parallel backend:\s*(.+)$")
_PARALLEL_ENV = re.compile(r"^\s+([A-Z_]+)\s*:\s*(.+)$")


@dataclasses.dataclass(frozen=True)
class BuildConfig:
    """Structured view of one `torch.__config__.show()` text.

    Booleans are None when the text does not say.  Versions are strings as printed.
    `nvcc_archs` lists the `code=` targets of NVCC architecture flags (e.g. "sm_90").
    `cudnn_runtime` is the "CuDNN x.y" line (PyTorch prints it in a compact form such as
    "91.0.1" for 9.10.1), `cudnn_build` the `CUDNN_VERSION` setting.
    """

    torch_version: Optional[str] = None
    compiler: Optional[str] = None
    compiler_version: Optional[str] = None
    cxx_standard: Optional[str] = None
    blas_info: Optional[str] = None
    lapack_info: Optional[str] = None
    use_mkl: Optional[bool] = None
    mkl_version: Optional[str] = None
    use_mkldnn: Optional[bool] = None
    onednn_version: Optional[str] = None
    use_openmp: Optional[bool] = None
    openmp_version: Optional[str] = None
    cpu_capability: Optional[str] = None
    build_type: Optional[str] = None
    cxx_flags: str = ""
    opt_level: Optional[str] = None
    march: Optional[str] = None
    mcpu: Optional[str] = None
    tree_vectorize: bool = False
    debug_info: bool = False
    use_mpi: Optional[bool] = None
    use_cuda: Optional[bool] = None
    cuda_runtime: Optional[str] = None
    cuda_version: Optional[str] = None
    nvcc_archs: Tuple[str, ...] = ()
    cudnn_runtime: Optional[str] = None
    cudnn_built_against_cuda: Optional[str] = None
    cudnn_built_with: Optional[str] = None
    cudnn_build: Optional[str] = None
    use_cudnn: Optional[bool] = None
    magma_version: Optional[str] = None
    use_nccl: Optional[bool] = None
    use_nnpack: Optional[bool] = None
    settings: Dict[str, str] = dataclasses.field(default_factory=dict)
    extra_lines: Tuple[str, ...] = ()

    def to_json(self) -> dict:
        """Return a JSON-ready dict (tuples become lists)."""
        data = dataclasses.asdict(self)
        data["nvcc_archs"] = list(self.nvcc_archs)
        data["extra_lines"] = list(self.extra_lines)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "BuildConfig":
        """Inverse of `to_json`; unknown keys are ignored (forward compatibility)."""
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["nvcc_archs"] = tuple(kwargs.get("nvcc_archs", ()))
        kwargs["extra_lines"] = tuple(kwargs.get("extra_lines", ()))
        return cls(**kwargs)


def parse_bool(value: Optional[str]) -> Optional[bool]:
    """Map a CMake-style setting ("ON", "1", "OFF", "0", ...) to bool; None if unknown."""
    if value is None:
        return None
    word = value.strip().upper()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


def parse_settings(line: str) -> Dict[str, str]:
    """Split the `Build settings: K=V, K=V, ...` line into a dict, values stripped."""
    body = line.split(_SETTINGS_PREFIX, 1)[1].strip().rstrip(",")
    settings = {}
    for item in _SETTING_SPLIT.split(body):
        key, sep, value = item.partition("=")
        if sep:
            settings[key.strip()] = value.strip().rstrip(",").strip()
    return settings


def parse_cxx_flags(flags: str) -> dict:
    """Facts from CXX_FLAGS: last `-O` level, `-march`/`-mcpu`, vectorisation, `-g`.

    Returns:
        dict with keys opt_level (e.g. "2", None if absent), march, mcpu,
        tree_vectorize (bool), debug_info (bool: `-g` or `-g<level>` present).
    """
    levels = _OPT_LEVEL.findall(flags)
    arch = {kind: value for kind, value in _MARCH.findall(flags)}
    tokens = flags.split()
    return {
        "opt_level": levels[-1] if levels else None,
        "march": arch.get("arch"),
        "mcpu": arch.get("cpu"),
        "tree_vectorize": "-ftree-vectorize" in tokens,
        "debug_info": any(t == "-g" or re.fullmatch(r"-g[0-3]", t) for t in tokens),
    }


def _parse_feature_line(line: str, fields: dict) -> bool:
    """Fill `fields` from one bullet line of show(); return False if unknown."""
    patterns = (
        (_COMPILER, lambda m: fields.update(compiler=m.group(1), compiler_version=m.group(2))),
        (_CXX_STD, lambda m: fields.update(cxx_standard=m.group(1))),
        (_MKL_LINE, lambda m: fields.update(mkl_version=m.group(1))),
        (_ONEDNN_LINE, lambda m: fields.update(onednn_version=m.group(1))),
        (_OPENMP_LINE, lambda m: fields.update(openmp_version=m.group(1))),
        (_CAPABILITY_LINE, lambda m: fields.update(cpu_capability=m.group(1))),
        (_CUDA_RUNTIME, lambda m: fields.update(cuda_runtime=m.group(1))),
        (_NVCC_FLAGS, lambda m: fields.update(nvcc_archs=tuple(_SM_CODE.findall(m.group(1))))),
        (_CUDNN_LINE, lambda m: fields.update(cudnn_runtime=m.group(1),
                                              cudnn_built_against_cuda=m.group(2))),
        (_CUDNN_BUILT_WITH, lambda m: fields.update(cudnn_built_with=m.group(1))),
        (_MAGMA_LINE, lambda m: fields.update(magma_version=m.group(1))),
    )
    for pattern, apply in patterns:
        match = pattern.search(line)
        if match:
            apply(match)
            return True
    return line.startswith(_KNOWN_PREFIXES)


def _fields_from_settings(settings: Dict[str, str], fields: dict) -> None:
    """Fill `fields` from the Build settings dict."""
    flags = settings.get("CXX_FLAGS", "")
    fields.update(parse_cxx_flags(flags))
    fields.update(
        cxx_flags=flags.strip(),
        blas_info=settings.get("BLAS_INFO"),
        lapack_info=settings.get("LAPACK_INFO"),
        build_type=settings.get("BUILD_TYPE"),
        torch_version=settings.get("TORCH_VERSION"),
        cuda_version=settings.get("CUDA_VERSION"),
        cudnn_build=settings.get("CUDNN_VERSION"),
    )
    for key, name in (("USE_MKLDNN", "use_mkldnn"), ("USE_OPENMP", "use_openmp"),
                      ("USE_MPI", "use_mpi"), ("USE_CUDA", "use_cuda"),
                      ("USE_CUDNN", "use_cudnn"), ("USE_NCCL", "use_nccl"),
                      ("USE_NNPACK", "use_nnpack")):
        fields[name] = parse_bool(settings.get(key))


def parse_show(text: str) -> BuildConfig:
    """Parse the text of `torch.__config__.show()` into a `BuildConfig`.

    Args:
        text: the whole text as printed by torch (any version >= 1.8).

    Returns:
        BuildConfig. `use_mkl` is the USE_MKL setting when printed, otherwise whether
        an MKL library line is present (PyTorch < 2.0 omits USE_MKL=OFF).

    Raises:
        ValueError: the text is not a `show()` output (no "PyTorch built with" header).
    """
    if "PyTorch built with" not in text:
        raise ValueError("not a torch.__config__.show() text: no 'PyTorch built with' line")
    fields: dict = {}
    settings: Dict[str, str] = {}
    extra = []
    for raw in text.splitlines():
        line = raw.strip().lstrip("-").strip()
        if not line:
            continue
        if line.startswith(_SETTINGS_PREFIX):
            settings = parse_settings(line)
        elif not _parse_feature_line(line, fields):
            extra.append(line)
    _fields_from_settings(settings, fields)
    use_mkl = parse_bool(settings.get("USE_MKL"))
    fields["use_mkl"] = use_mkl if use_mkl is not None else fields.get("mkl_version") is not None
    if fields.get("use_mkldnn") is None:
        fields["use_mkldnn"] = fields.get("onednn_version") is not None
    if fields.get("use_openmp") is None:
        fields["use_openmp"] = fields.get("openmp_version") is not None
    return BuildConfig(settings=settings, extra_lines=tuple(extra), **fields)


def parse_parallel_info(text: str) -> dict:
    """Parse `torch.__config__.parallel_info()`.

    Returns:
        dict with integer keys intra_op_threads, interop_threads, omp_max_threads,
        mkl_max_threads, hardware_concurrency (absent when not printed), `backend`
        (e.g. "OpenMP", "native thread pool") and `env` (variable -> value or None
        for "[not set]").
    """
    names = {"at::get_num_threads()": "intra_op_threads",
             "at::get_num_interop_threads()": "interop_threads",
             "omp_get_max_threads()": "omp_max_threads",
             "mkl_get_max_threads()": "mkl_max_threads",
             "std::thread::hardware_concurrency()": "hardware_concurrency"}
    info: dict = {"env": {}}
    in_env = False
    for line in text.splitlines():
        number = _PARALLEL_NUM.match(line)
        backend = _PARALLEL_BACKEND.match(line)
        if number:
            info[names[number.group(1)]] = int(number.group(2))
        elif backend:
            info["backend"] = backend.group(1).strip()
            in_env = False
        elif line.startswith("Environment variables"):
            in_env = True
        elif in_env and _PARALLEL_ENV.match(line):
            key, value = _PARALLEL_ENV.match(line).groups()
            info["env"][key] = None if value.strip() == "[not set]" else value.strip()
    return info
