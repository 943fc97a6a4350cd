"""The field types that records/validate.py builds its document specs from.

Each Spec checks one JSON value and raises SchemaError naming the path of the first
bad field ("results[3].blocks_s[0][2]: expected a number, got 'fast'").
"""

import math
from typing import Dict, Optional

from eb_torchperf.errors import SchemaError


class Spec:
    """Base class of a field's expected type."""

    name = "a value"

    def check(self, value, path: str) -> None:
        raise NotImplementedError


def _json_name(value) -> str:
    """How a JSON value is named in a message: null, true, a number, "text", an object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 40 else "%s... (%d digits)" % (text[:12], len(text))
    if isinstance(value, str):
        return repr(value[:40] + ("..." if len(value) > 40 else ""))
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _fail(path: str, expected: str, value) -> None:
    raise SchemaError("%s: expected %s, got %s" % (path or "document", expected, _json_name(value)))


class Any(Spec):
    """Anything JSON can hold."""

    def check(self, value, path):
        return None


class Str(Spec):
    name = "a string"

    def check(self, value, path):
        if not isinstance(value, str):
            _fail(path, self.name, value)


class FileName(Str):
    """A string that is one plain file name: no folder separator, not "." or "..", not
    hidden (a fleet job's name becomes jobs/<name>.err; "../x" read back from an edited
    fleet.json would reach outside the fleet folder)."""

    name = "a plain file name (no '/', not starting with '.')"

    def check(self, value, path):
        if not isinstance(value, str) or not value or "/" in value or "\0" in value \
                or value.startswith("."):
            _fail(path, self.name, value)


class Bool(Spec):
    name = "true or false"

    def check(self, value, path):
        if not isinstance(value, bool):
            _fail(path, self.name, value)


class Int(Spec):
    """An integer (not a bool), at least `low`."""

    def __init__(self, low: Optional[int] = None):
        self.low = low
        self.name = "an integer" + ("" if low is None else " >= %d" % low)

    def check(self, value, path):
        if isinstance(value, bool) or not isinstance(value, int) or (
                self.low is not None and value < self.low):
            _fail(path, self.name, value)


class Num(Spec):
    """A finite number (not a bool); `positive`: > 0."""

    def __init__(self, positive: bool = False):
        self.positive = positive
        self.name = "a positive number" if positive else "a number"

    def check(self, value, path):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not _finite(value) or (self.positive and value <= 0):
            _fail(path, self.name, value)


def _finite(value) -> bool:
    """A finite float, or an integer a float can hold (JSON allows 10**400)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


class Seconds(Spec):
    """A timed block in seconds, within [SHORTEST_S, LONGEST_S]: 1e308 s would make a
    rate of zero and its logarithm a math domain error (issue 27)."""

    SHORTEST_S, LONGEST_S = 1e-12, 1e6
    name = "a time in seconds between 1e-12 and 1e+06"

    def check(self, value, path):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not self.SHORTEST_S <= value <= self.LONGEST_S:
            _fail(path, self.name, value)


class Enum(Spec):
    """One of a few strings."""

    def __init__(self, *choices: str):
        self.choices = choices
        self.name = "one of %s" % ", ".join(repr(c) for c in choices)

    def check(self, value, path):
        if value not in self.choices or not isinstance(value, str):
            _fail(path, self.name, value)


class Opt(Spec):
    """`spec`, or null."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.name = spec.name + " or null"

    def check(self, value, path):
        if value is not None:
            self.spec.check(value, path)


class Scalar(Spec):
    """A string, number, true/false or null (parameter values, evidence)."""

    name = "a string, number, true/false or null"

    def check(self, value, path):
        if value is not None and not isinstance(value, (str, int, float, bool)):
            _fail(path, self.name, value)


class ListOf(Spec):
    """A list whose items all match `item` (at least `min_items`)."""

    def __init__(self, item: Spec, min_items: int = 0):
        self.item, self.min_items = item, min_items
        self.name = "a list" if not min_items else "a non-empty list"

    def check(self, value, path):
        if not isinstance(value, list) or len(value) < self.min_items:
            _fail(path, self.name, value)
        for index, item in enumerate(value):
            self.item.check(item, "%s[%d]" % (path, index))


class MapOf(Spec):
    """An object with any keys, every value matching `value`."""

    name = "an object"

    def __init__(self, value: Spec):
        self.value = value

    def check(self, value, path):
        if not isinstance(value, dict):
            _fail(path, self.name, value)
        for key, item in value.items():
            self.value.check(item, _join(path, key))


class Obj(Spec):
    """An object with `required` and `optional` fields (name -> spec)."""

    name = "an object"

    def __init__(self, required: Optional[Dict[str, Spec]] = None,
                 optional: Optional[Dict[str, Spec]] = None):
        self.required = required or {}
        self.optional = optional or {}

    def check(self, value, path):
        if not isinstance(value, dict):
            _fail(path, self.name, value)
        for key, spec in self.required.items():
            if key not in value:
                raise SchemaError("%s: missing field %r" % (path or "document", key))
            spec.check(value[key], _join(path, key))
        for key, spec in self.optional.items():
            if key in value:
                spec.check(value[key], _join(path, key))


def _join(path: str, key) -> str:
    return "%s.%s" % (path, key) if path else str(key)


def check(document, spec: Spec, path: str = "") -> None:
    """Raise SchemaError (one line, path of the first bad field) unless `document`
    matches `spec`."""
    spec.check(document, path)
