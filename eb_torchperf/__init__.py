"""eb_torchperf: audit a PyTorch installation against an upstream wheel.

Importing this package has no side effects and needs only the standard library;
heavier dependencies (pandas, jinja2, rich, EasyBuild) are imported by the modules
that use them.
"""

__version__ = "0.1.0"
