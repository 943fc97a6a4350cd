"""ReFrame regression test for site test suites (the EESSI test-suite, site CI).

`CHECK_PATH` is the file to give `reframe -c`; `python -m eb_torchperf.reframe`
prints it, so a site runs::

    reframe -C site-config.py -c "$(python -m eb_torchperf.reframe)" -r \\
        -S TorchPerfCheck.modules=PyTorch/2.9.1-foss-2025a \\
        -S TorchPerfCheck.reference_python=/shared/venvs/torch-wheel/bin/python

The check file imports eb_torchperf, so ReFrame must run in an environment where
eb_torchperf is installed (`pip install eb_torchperf[reframe]`).  Importing this
package does not import ReFrame.
"""

import os

#: Absolute path of the ReFrame check file shipped in the package.
CHECK_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchperf_check.py")
