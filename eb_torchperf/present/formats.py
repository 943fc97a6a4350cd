"""The report formats and their `--format` parser (standard library only, so a command
can check its options before the report package, Jinja2 and pandas are imported)."""

FORMATS = ("html", "md", "json")
#: File suffix of each report format.
SUFFIXES = {"html": ".html", "md": ".md", "json": ".json"}


def parse_formats(text: str) -> tuple:
    """"html,md" -> ("html", "md").

    Raises:
        ConfigError: an unknown format (message lists the known ones).
    """
    from eb_torchperf.errors import ConfigError
    formats = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ConfigError("unknown report format %s (choose from %s)"
                          % (", ".join(unknown) or repr(text), ", ".join(FORMATS)))
    return formats
