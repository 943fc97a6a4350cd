"""Compatibility name: site hooks files import `eb_torchperf.easybuild_hooks`.

The hooks live in `eb_torchperf.easybuild.hooks`; this module *is* that module (one
object in sys.modules), so a site that sets attributes on it changes the real one.
"""

import sys

from eb_torchperf.easybuild import hooks as _hooks

sys.modules[__name__] = _hooks
