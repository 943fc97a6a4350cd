"""EasyconfigFacts to and from JSON: how the sandboxed parser hands its facts back.

The parse runs the easyconfig's code (lint/sandbox.py), so what comes back is untrusted:
`facts_from_json` checks every field's type (records/validate.py) before the rules see
it, and the findings are computed outside the sandbox from these facts.  An easyconfig
can still make itself look different (its values are what its code computes), but it
cannot hand back a verdict.
"""

import dataclasses

from eb_torchperf.lint.facts import (INSTALL_KINDS, Dependency, EasyconfigFacts,
                                     FlexiBLASFacts, ToolchainFacts)
from eb_torchperf.records import validate as v

_DEPENDENCY = v.Obj(required={"name": v.Str(), "version": v.Str()}, optional={
    "versionsuffix": v.Str(), "toolchain": v.Str(), "build_only": v.Bool(),
    "line": v.Opt(v.Int())})
_TOOLCHAIN = v.Obj(required={"name": v.Str(), "version": v.Str()}, optional={
    "components": v.ListOf(v.Str()), "components_source": v.Str(),
    "component_versions": v.MapOf(v.Str()), "native_flag": v.Opt(v.Str()),
    "imkl_hint": v.Opt(v.Str())})
_FLEXIBLAS = v.Obj(required={"version": v.Str()}, optional={
    "default_backend": v.Opt(v.Str()), "easyconfig": v.Str()})
_STRINGS = v.ListOf(v.Str())
#: The JSON shape of EasyconfigFacts (dataclasses.asdict, tuples as lists).
FACTS = v.Obj(required={
    "path": v.Str(), "name": v.Str(), "version": v.Str(), "versionsuffix": v.Str(),
    "easyblock": v.Str(), "install_kind": v.Enum(*INSTALL_KINDS), "arch": v.Str(),
    "toolchain": _TOOLCHAIN}, optional={
    "dependencies": v.ListOf(_DEPENDENCY), "flexiblas": v.Opt(_FLEXIBLAS),
    "cuda_compute_capabilities": _STRINGS, "eb_cuda_compute_capabilities": _STRINGS,
    "runtest": v.Any(), "skipsteps": _STRINGS, "max_failed_tests": v.Opt(v.Int()),
    "optarch": v.Any(), "eb_optarch": v.Opt(v.Str()), "torch_wheel": v.Str(),
    "lines": v.MapOf(v.Int()), "missing_dependencies": v.ListOf(_DEPENDENCY),
    "parse_warnings": _STRINGS, "easyblocks_version": v.Str()})


def facts_to_json(facts: EasyconfigFacts) -> dict:
    """JSON-ready dict of `facts` (dataclasses.asdict)."""
    return dataclasses.asdict(facts)


def _known(document: dict, spec: v.Obj) -> dict:
    """The fields of `document` that `spec` names (others are dropped)."""
    return {key: value for key, value in document.items()
            if key in spec.required or key in spec.optional}


def _dependencies(items) -> tuple:
    return tuple(Dependency(**_known(item, _DEPENDENCY)) for item in items)


def facts_from_json(document) -> EasyconfigFacts:
    """EasyconfigFacts from `facts_to_json`'s shape, every field type-checked.

    Raises:
        SchemaError: a field is missing or of the wrong type (one line, its path).
    """
    v.check(document, FACTS, "facts")
    fields = _known(document, FACTS)
    toolchain = _known(fields.pop("toolchain"), _TOOLCHAIN)
    toolchain["components"] = tuple(toolchain.get("components", ()))
    flexiblas = fields.pop("flexiblas", None)
    for key in ("cuda_compute_capabilities", "eb_cuda_compute_capabilities", "skipsteps",
                "parse_warnings"):
        if key in fields:
            fields[key] = tuple(fields[key])
    for key in ("dependencies", "missing_dependencies"):
        fields[key] = _dependencies(fields.get(key, ()))
    return EasyconfigFacts(toolchain=ToolchainFacts(**toolchain),
                           flexiblas=FlexiBLASFacts(**_known(flexiblas, _FLEXIBLAS)) if flexiblas else None,
                           **fields)
