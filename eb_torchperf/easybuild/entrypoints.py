"""eb_torchperf's hooks as EasyBuild 5 entry points (group `easybuild.hooks`).

Enabled with `eb --use-entrypoints` once eb_torchperf is installed in the Python that
runs `eb`: no hooks file needed, and a site's own `--hooks` file keeps working beside
them.  Only the entry-point machinery imports this module: importing it registers the
hooks (EasyBuild's decorator), which must not happen when `eb_torchperf.easybuild.hooks`
is used from a hooks file, or they would run twice.

EasyBuild 5.4 limitation (easybuild/tools/hooks.py, `run_hook`): when the `--hooks` file
also defines `post_sanitycheck_hook`, the step label is rewritten to "post-sanitycheck"
before entry points are looked up, so this entry point is skipped; such a site calls
`eb_torchperf.easybuild.hooks.post_sanitycheck_hook(self)` from its own hook instead.
"""

from easybuild.tools.entrypoints import EntrypointHook
from easybuild.tools.hooks import PARSE, SANITYCHECK_STEP

from eb_torchperf.easybuild import hooks as easybuild_hooks


@EntrypointHook(PARSE)
def torchperf_parse(ec, *args, **kwargs):
    """Entry-point twin of `easybuild_hooks.parse_hook`."""
    return easybuild_hooks.parse_hook(ec, *args, **kwargs)


@EntrypointHook(SANITYCHECK_STEP, post_step=True)
def torchperf_post_sanitycheck(self, *args, **kwargs):
    """Entry-point twin of `easybuild_hooks.post_sanitycheck_hook`."""
    return easybuild_hooks.post_sanitycheck_hook(self, *args, **kwargs)
