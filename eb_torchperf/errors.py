"""The one exception hierarchy of eb_torchperf.

Every error that crosses a process or user boundary is a `TorchPerfError`; the CLI
and the EasyBuild hook catch it once and print its message, which says what to do.
"""


class TorchPerfError(Exception):
    """Base class: a failure with a message meant for the user."""


class ProbeError(TorchPerfError):
    """A probe worker in a target interpreter failed.

    Attributes:
        command: argv of the worker process.
        exit_code: the worker's exit status (negative: killed by that signal), or None
            while it still ran (timeout).
        stderr_tail: the last lines the worker wrote to stderr.
    """

    def __init__(self, message, command=(), exit_code=None, stderr_tail=""):
        super().__init__(message)
        self.command = tuple(command)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class SchemaError(TorchPerfError):
    """A results or probe JSON document is malformed or of an unknown schema version."""


class ConfigError(TorchPerfError):
    """Bad user input: option values, paths, reference specifications."""


class WriteError(TorchPerfError):
    """An output file could not be written (full disk, no permission); the message
    names the file, and the previous file of that name is unchanged (safe_write)."""


class SlurmError(TorchPerfError):
    """A Slurm command (sbatch, sacct, scontrol, scancel) failed or could not run.

    Attributes:
        command: argv of the Slurm command.
        exit_code: its exit status, or None when it did not start or timed out.
        stderr_tail: the last lines it wrote to stderr.
    """

    def __init__(self, message, command=(), exit_code=None, stderr_tail=""):
        super().__init__(message)
        self.command = tuple(command)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail
