"""Fleet audit: one audit job per Slurm partition (node type), gathered into one report.

Data flows one way: `plan` (jobs and their batch scripts, the fleet folder's manifest)
-> `slurm` (sbatch / sacct / scontrol / scancel) -> `wait` (poll with a deadline) ->
`gather` (results JSON, job exit state, stderr -> one outcome per job) -> `render`
(markdown and terminal).  `eb_torchperf.cli.fleet` is the shell.
"""
