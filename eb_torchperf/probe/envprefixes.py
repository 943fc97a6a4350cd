"""Environment variables that torch or the libraries it loads read, as data.

The probe records every variable whose name starts with one of ENV_PREFIXES (or is
one of ENV_NAMES), whatever its value; the runner passes the same variables on to
its workers, so a setting made in the user's shell or with --target-env reaches the
measured process.  Each entry names who reads it (the documentation the prefix
rests on), so a new prefix is a new line here, not a change of code.  Stdlib only:
this module runs inside the audited interpreter.
"""

#: (prefix, who reads it, source).
ENV_PREFIXES = (
    ("OMP_", "OpenMP runtimes (libgomp, libiomp5, libomp)",
     "https://www.openmp.org/spec-html/5.0/openmpch6.html"),
    ("GOMP_", "GNU libgomp", "https://gcc.gnu.org/onlinedocs/libgomp/Environment-Variables.html"),
    ("KMP_", "Intel/LLVM OpenMP runtime",
     "https://www.intel.com/content/www/us/en/docs/dpcpp-cpp-compiler/developer-guide-"
     "reference/2023-0/supported-environment-variables.html"),
    ("MKL_", "Intel oneMKL", "https://www.intel.com/content/www/us/en/docs/onemkl/developer-"
     "guide-linux/2023-0/instruction-set-specific-dispatching-on-intel-archs.html"),
    ("DNNL_", "oneDNN", "https://oneapi-src.github.io/oneDNN/dev_guide_cpu_dispatcher_control.html"),
    ("ONEDNN_", "oneDNN", "https://oneapi-src.github.io/oneDNN/dev_guide_cpu_dispatcher_control.html"),
    ("MKLDNN_", "oneDNN (old name)", "https://oneapi-src.github.io/oneDNN/dev_guide_verbose.html"),
    ("OPENBLAS_", "OpenBLAS", "https://github.com/OpenMathLib/OpenBLAS/wiki/Faq"),
    ("GOTO", "OpenBLAS (GotoBLAS names)", "https://github.com/OpenMathLib/OpenBLAS/wiki/Faq"),
    ("BLIS_", "BLIS", "https://github.com/flame/blis/blob/master/docs/Multithreading.md"),
    ("FLEXIBLAS", "FlexiBLAS", "https://www.mankier.com/1/flexiblas"),
    ("ATEN_", "ATen CPU dispatch",
     "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/DispatchStub.cpp"),
    ("TORCH_", "PyTorch", "https://pytorch.org/docs/stable/torch_environment_variables.html"),
    ("PYTORCH_", "PyTorch", "https://pytorch.org/docs/stable/torch_environment_variables.html"),
    ("TORCHINDUCTOR_", "torch.compile (inductor)",
     "https://pytorch.org/docs/stable/torch.compiler_inductor_provided_env_vars.html"),
    ("TRITON_", "Triton", "https://github.com/triton-lang/triton/blob/main/README.md"),
    ("CUDA_", "CUDA runtime and driver",
     "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars"),
    ("CUBLAS", "cuBLAS", "https://docs.nvidia.com/cuda/cublas/index.html"),
    ("CUDNN", "cuDNN", "https://docs.nvidia.com/deeplearning/cudnn/latest/reference/"
     "troubleshooting.html"),
    ("NCCL_", "NCCL", "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"),
    ("NVIDIA_", "NVIDIA libraries (e.g. NVIDIA_TF32_OVERRIDE)",
     "https://docs.nvidia.com/cuda/cublas/index.html#tf32-override"),
    ("MALLOC_", "glibc malloc", "https://www.gnu.org/software/libc/manual/html_node/"
     "Memory-Allocation-Tunables.html"),
    ("GLIBC_TUNABLES", "glibc", "https://www.gnu.org/software/libc/manual/html_node/Tunables.html"),
    ("LD_", "the dynamic linker (LD_PRELOAD, LD_LIBRARY_PATH, LD_BIND_NOW)",
     "https://man7.org/linux/man-pages/man8/ld.so.8.html"),
    ("SLURM_CPUS", "Slurm (CPUs of the job)", "https://slurm.schedmd.com/sbatch.html"),
    ("SLURM_JOB_CPUS", "Slurm (CPUs of the job)", "https://slurm.schedmd.com/sbatch.html"),
)
#: Whole names recorded as well (Python's own path settings).
ENV_NAMES = ("PYTHONPATH", "EBPYTHONPREFIXES")


def read_by_torch(name):
    """True if `name` is an environment variable torch or one of its libraries reads."""
    return name in ENV_NAMES or any(name.startswith(p) for p, _, _ in ENV_PREFIXES)


def source_of(name):
    """(who reads it, source URL) for `name`, or None when no prefix matches."""
    for prefix, who, source in ENV_PREFIXES:
        if name.startswith(prefix):
            return who, source
    return None
