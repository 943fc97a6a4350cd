"""Documented effects of environment variables on benchmark families (issue 29).

The data file (`data/effects.json`) says, per variable, what it does in one line, which
benchmark families (probe/registry.py `device/family`) it can change and the public
page that documents it.  The differences table shows that line instead of "unknown
effect"; the table is an aid, a trial (explain_stage/difftrials.py) stays the proof.
"""

import dataclasses
import functools
import json
import pathlib
from typing import Optional, Tuple

DATA_FILE = pathlib.Path(__file__).parent / "data" / "effects.json"


@dataclasses.dataclass(frozen=True)
class Effect:
    """One documented effect.

    Attributes:
        name: the variable, or a prefix ending in "*" ("MALLOC_*").
        effect: what it does, one line.
        families: "device/family" pairs of the benchmark registry it can change.
        source: URL of the public documentation.
    """

    name: str
    effect: str
    families: Tuple[str, ...]
    source: str

    def matches(self, key: str) -> bool:
        if self.name.endswith("*"):
            return key.startswith(self.name[:-1])
        return key == self.name


@functools.lru_cache(maxsize=None)
def load_effects(path: str = str(DATA_FILE)) -> Tuple[Effect, ...]:
    """Every entry of the data file, in its order.

    Raises:
        OSError: the file cannot be read.
        ValueError, KeyError, TypeError: it is not the documented shape.
    """
    with open(path, encoding="utf-8") as handle:
        entries = json.load(handle)["effects"]
    return tuple(Effect(e["name"], e["effect"], tuple(e["families"]), e["source"])
                 for e in entries)


def documented_effect(key: str) -> Optional[Effect]:
    """The entry for a difference's key (an environment variable), None without one."""
    return next((e for e in load_effects() if e.matches(key)), None)
