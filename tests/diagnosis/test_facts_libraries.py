"""Classification of mapped BLAS and OpenMP libraries (real paths of real installs)."""

import pytest

from eb_torchperf.diagnosis.facts import blas_kind, openmp_kind, torch_blas

from auditcases import EASYBUILD, FLEXIBLAS_MAPPED, FLEXIBLAS_POOLS, probe_from_config


@pytest.mark.parametrize("path, kind", [
    ("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", "reference BLAS"),      # Debian netlib
    ("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", "OpenBLAS"),     # Debian alternative
    ("/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3", "BLIS"),
    ("/apps/easybuild/software/FlexiBLAS/3.4.5-GCC-14.2.0/lib/libflexiblas.so.3", "FlexiBLAS"),
    ("/apps/easybuild/software/AOCL-BLAS/5.0-GCC-14.2.0/lib/libblis-mt.so.5", "AOCL-BLAS"),
    ("/opt/intel/oneapi/mkl/2024.2/lib/libmkl_rt.so.2", "MKL"),
    ("/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3.11.0", None),
    ("/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0", None),
    ("/usr/lib/x86_64-linux-gnu/libdnnl.so.2.6", None),
])
def test_blas_kind(path, kind):
    assert blas_kind(path) == kind


@pytest.mark.parametrize("path, kind", [
    ("/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0", "GNU libgomp"),
    ("/venv/lib/python3.11/site-packages/torch.libs/libgomp-a34b3233.so.1", "GNU libgomp"),
    ("/opt/intel/oneapi/compiler/lib/libiomp5.so", "Intel libiomp5"),
    ("/usr/lib/llvm-14/lib/libomp.so.5", "LLVM libomp"),
    ("/usr/lib/x86_64-linux-gnu/libompitrace.so", None),
])
def test_openmp_kind(path, kind):
    assert openmp_kind(path) == kind


def test_flexiblas_backend_from_threadpoolctl_then_from_the_mapped_wrapper():
    probe = probe_from_config(EASYBUILD, mapped_libraries__libraries=FLEXIBLAS_MAPPED,
                              threadpools__pools=FLEXIBLAS_POOLS)
    assert torch_blas(probe).backend == "OPENBLAS"
    no_pools = probe_from_config(EASYBUILD, mapped_libraries__libraries=FLEXIBLAS_MAPPED,
                                 threadpools__pools=[])
    assert torch_blas(no_pools).backend == "OPENBLAS"
    by_env = probe_from_config(EASYBUILD, mapped_libraries__libraries=FLEXIBLAS_MAPPED[:1],
                               threadpools__pools=[], env__FLEXIBLAS="IMKL")
    assert torch_blas(by_env).describe() == "FlexiBLAS → IMKL " + FLEXIBLAS_MAPPED[0]
