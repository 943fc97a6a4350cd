"""ReFrame settings for the throwaway Slurm cluster of scripts/slurm-up.sh.

System `torchperf`: partition `local` (local scheduler) and partitions `zen` and
`grace` (Slurm; scheduler from $TORCHPERF_RFM_SCHEDULER: "slurm", which needs sacct,
or "squeue" for a cluster without accounting).  Also an example for sites.
"""

import os

SCHEDULER = os.environ.get("TORCHPERF_RFM_SCHEDULER", "slurm")


def _slurm_partition(name):
    return {"name": name, "descr": "Slurm partition %s" % name, "scheduler": SCHEDULER,
            "launcher": "srun", "access": ["--partition=%s" % name],
            "environs": ["builtin"], "max_jobs": 2}


site_configuration = {
    "systems": [{
        "name": "torchperf", "descr": "eb_torchperf test cluster on loopback",
        "hostnames": [".*"], "modules_system": "nomod",
        "partitions": [
            {"name": "local", "descr": "this host", "scheduler": "local",
             "launcher": "local", "environs": ["builtin"]},
            _slurm_partition("zen"),
            _slurm_partition("grace"),
        ],
    }],
    "environments": [{"name": "builtin", "cc": "cc", "cxx": "", "ftn": ""}],
}
