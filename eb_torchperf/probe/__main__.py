"""Entry point in the target: `python -s -m ebtp_probe --out FILE | --worker --reply-fd N |
--zygote --reply-fd N --fd-socket M` (probe.zygote).

`--out FILE` collects facts once and writes one JSON document (the threadpoolctl
`python -m threadpoolctl` shape); diagnostics go to stderr.  Exit status is non-zero
only when no JSON could be written.
"""

import argparse
import json
import sys

from .parentdeath import die_with_parent

PROBE_SCHEMA_VERSION = 1


def _facts_document():
    try:
        import torch
    except BaseException as exc:  # noqa: BLE001 -- written into the document
        return {"schema_version": PROBE_SCHEMA_VERSION, "facts": None,
                "errors": [{"name": "import torch", "exc_type": type(exc).__name__,
                            "message": str(exc)}]}
    from .facts import collect_all
    facts = collect_all(torch)
    return {"schema_version": PROBE_SCHEMA_VERSION, "facts": facts, "errors": facts["errors"]}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="ebtp_probe", description=__doc__)
    parser.add_argument("--out", help="write the facts JSON here ('-' for stdout)")
    parser.add_argument("--worker", action="store_true", help="serve benchmark requests")
    parser.add_argument("--reply-fd", type=int, help="file descriptor for worker replies")
    parser.add_argument("--zygote", action="store_true",
                        help="import torch once, fork workers on request")
    parser.add_argument("--fd-socket", type=int, help="Unix socket the zygote gets fds on")
    args = parser.parse_args(argv)
    die_with_parent()  # no worker, zygote or probe outlives a runner killed outright
    if args.zygote:
        from .zygote import main as zygote_main
        return zygote_main(args.reply_fd, args.fd_socket)
    if args.worker:
        from .worker import main as worker_main
        return worker_main(args.reply_fd)
    if not args.out:
        parser.error("give --out FILE or --worker --reply-fd N")
    document = _facts_document()
    for error in document["errors"]:
        print("probe: %(name)s: %(exc_type)s: %(message)s" % error, file=sys.stderr)
    try:
        text = json.dumps(document, indent=1, default=str)
        if args.out == "-":
            sys.stdout.write(text + "\n")
        else:
            with open(args.out, "w") as handle:
                handle.write(text + "\n")
    except OSError as exc:
        print("probe: cannot write %s: %s" % (args.out, exc), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
