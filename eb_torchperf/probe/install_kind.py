"""How the interpreter's torch was installed: EasyBuild, Spack, conda, Debian, a venv.

Read from the file system around `torch/__init__.py` and the environment (stdlib
only, like the rest of the probe).  The remedies of the findings are phrased for this
packaging system first (eb_torchperf.diagnosis.packaging_advice).
"""

import os
import sys

#: Where Debian/Ubuntu's python3-torch puts torch.
DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"


def _parents(path):
    """The folders above `path`, nearest first, up to (not including) the root."""
    folder = os.path.dirname(path)
    while folder and folder != os.path.dirname(folder):
        yield folder
        folder = os.path.dirname(folder)


def _easybuild_root(torch_file, environ):
    root = environ.get("EBROOTPYTORCH")
    if root and torch_file.startswith(os.path.realpath(root).rstrip(os.sep) + os.sep):
        return os.path.realpath(root), "$EBROOTPYTORCH"
    for folder in _parents(torch_file):
        meta = os.path.join(folder, "easybuild")
        try:
            if os.path.isdir(meta) and any(n.endswith(".eb") for n in os.listdir(meta)):
                return folder, "easyconfig in %s" % meta
        except OSError:
            continue
    return None, None


def detect(torch_file, environ=None, prefix=None):
    """{"kind", "root", "evidence"} of the torch at `torch_file`.

    kind: "easybuild" (an EasyBuild installation: $EBROOTPYTORCH or an `easybuild/`
    folder with the easyconfig above torch), "spack" (a `.spack` folder above it),
    "conda" (`conda-meta` above it), "debian" (/usr/lib/python3/dist-packages), "venv"
    (pip in a venv: pyvenv.cfg in sys.prefix) or "pip" (anything else).
    """
    environ = os.environ if environ is None else environ
    prefix = sys.prefix if prefix is None else prefix
    if not torch_file:
        return {"kind": "unknown", "root": None, "evidence": "torch has no __file__"}
    real = os.path.realpath(torch_file)
    root, why = _easybuild_root(real, environ)
    if root:
        return {"kind": "easybuild", "root": root, "evidence": why}
    for folder in _parents(real):
        if os.path.isdir(os.path.join(folder, ".spack")):
            return {"kind": "spack", "root": folder, "evidence": "%s/.spack" % folder}
        if os.path.isdir(os.path.join(folder, "conda-meta")):
            return {"kind": "conda", "root": folder, "evidence": "%s/conda-meta" % folder}
    if real.startswith(DEBIAN_DIST_PACKAGES + os.sep):
        return {"kind": "debian", "root": DEBIAN_DIST_PACKAGES,
                "evidence": "torch in %s (python3-torch)" % DEBIAN_DIST_PACKAGES}
    cfg = os.path.join(prefix, "pyvenv.cfg")
    if os.path.isfile(cfg) and real.startswith(os.path.realpath(prefix) + os.sep):
        return {"kind": "venv", "root": prefix, "evidence": cfg}
    return {"kind": "pip", "root": None, "evidence": "torch at %s" % real}


def collect_install(torch):
    """The probe collector: detect() for the imported torch."""
    return detect(getattr(torch, "__file__", None))
