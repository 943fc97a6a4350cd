"""eb_torchperf: audit a PyTorch installation against an upstream wheel.

Importing this package has no side effects and needs only the standard library;
heavier dependencies (pandas, jinja2, rich, EasyBuild) are imported by the modules
that use them.  The public API below is loaded on first use (module __getattr__):

    audit(target, reference="wheel", suite="quick", **options) -> AuditResult
    load_results(path) -> AuditResult
    diagnose(result) -> tuple of Finding
    write_reports(result, out_dir, formats=("html", "md")) -> {format: path}
    explain(result, workloads=None, try_remedies=True) -> ExplainResult

(eb_torchperf.workflows.api documents them; AuditRequest, AuditResult and Finding are
the types they use.)
"""

__version__ = "0.1.0"

#: public name -> module that defines it (imported when the name is first used).
_API = {
    "audit": "eb_torchperf.workflows.api",
    "load_results": "eb_torchperf.workflows.api",
    "diagnose": "eb_torchperf.workflows.api",
    "write_reports": "eb_torchperf.workflows.api",
    "explain": "eb_torchperf.workflows.api",
    "AuditRequest": "eb_torchperf.workflows.request",
    "AuditResult": "eb_torchperf.records.measurements",
    "Finding": "eb_torchperf.records.findings",
}

__all__ = ["__version__"] + sorted(_API)


def __getattr__(name):
    module_name = _API.get(name)
    if module_name is None:
        raise AttributeError("module 'eb_torchperf' has no attribute %r" % name)
    import importlib
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_API))
