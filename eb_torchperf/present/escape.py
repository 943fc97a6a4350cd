"""The one place where text from a user or a target is made safe for an output kind.

Values that reach eb_torchperf's outputs come from the command line, from the
audited interpreter (paths, version strings, build texts, error messages) and from
stored files, all of which the tool does not control.  Each output kind has one
helper here, and every writer uses it:

- Markdown text (reports, `gpu --markdown`, fleet.md, lint): `markdown_text`;
  inline code: `markdown_code`; a fenced block: `markdown_fence`; a link:
  `markdown_link` (GitHub-flavoured Markdown, https://github.github.com/gfm/).
- rich console markup (the terminal): `rich_text` (rich.markup.escape).
- one terminal or log line (error messages): `one_line`.
- a value on a shell line (Slurm batch scripts): `shell_value` (control characters
  refused, then shlex.quote).
- a file name made from an option (fleet job names): `file_name`.

HTML needs no helper: the Jinja2 HTML environment autoescapes every value.
"""

import re
import shlex


from eb_torchperf.errors import ConfigError

#: ASCII control characters (newline, carriage return, escape, ...) and DEL.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: Markdown punctuation that can start emphasis, code, links, strike-through or an
#: escape (GFM "backslash escapes": any ASCII punctuation may be escaped).
_MD_PUNCT = re.compile(r"([\\`*\[\]~])")
#: "_" opens or closes emphasis only at a word boundary (GFM: intraword "_" is
#: literal), so only those are escaped: paths like libopenblas_64.so stay readable.
_MD_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
#: Characters kept in names derived from options (everything else becomes "_").
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")


def markdown_text(value) -> str:
    """`value` as literal Markdown text, safe in a paragraph and in a table cell.

    HTML is neutralised (&, <, > as entities: GitHub renders raw HTML), Markdown
    punctuation is backslash-escaped, pipes cannot split a table cell, and a line
    break becomes <br>, so no value can start a block of its own (a blank line would
    end the table and let raw HTML through).
    """
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_PUNCT.sub(r"\\\1", text)
    text = _MD_UNDERSCORE.sub(r"\\_", text).replace("|", "\\|")
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")
    return _CONTROL.sub(" ", text)


def markdown_code(value) -> str:
    """An inline code span showing `value` literally, safe in a table cell.

    Code spans collapse line breaks into spaces anyway (GFM 6.1), so whitespace runs
    are collapsed here, which also keeps a blank line out; the fence is one backtick
    longer than the longest run inside; pipes are escaped (GFM tables).
    """
    text = " ".join(_CONTROL.sub(" ", str(value)).split())
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`"):
        text = " %s " % text
    return (fence + text + fence).replace("|", "\\|")


def markdown_fence(text) -> str:
    """A fenced code block of `text` (several lines), fence longer than any inside."""
    body = _CONTROL.sub(lambda m: m.group() if m.group() == "\n" else " ", str(text))
    longest = max((len(run) for run in re.findall(r"`{3,}|~{3,}", body)), default=2)
    fence = "`" * max(3, longest + 1)
    return "%s\n%s\n%s" % (fence, body.rstrip("\n"), fence)


def markdown_link(value) -> str:
    """An autolink for an http(s) URL without spaces or angle brackets; escaped text
    otherwise (a `javascript:` or other scheme is never made a link)."""
    text = str(value)
    if re.fullmatch(r"https?://[^\s<>]+", text):
        return "<%s>" % text
    return markdown_text(text)


def rich_text(value) -> str:
    """`value` as literal text inside a rich markup string ("[/x]", "[link=...]" are
    shown, not interpreted); control characters become spaces."""
    from rich.markup import escape as _rich_escape  # only where rich draws
    return _rich_escape(_CONTROL.sub(" ", str(value)))


def one_line(value) -> str:
    """`value` as one line for a terminal or log: line breaks become " | ", other
    control characters (terminal escape sequences) are shown as \\xNN."""
    text = str(value).replace("\r\n", "\n").strip("\n")
    text = " | ".join(line for line in text.split("\n"))
    return _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), text)


def shell_value(value, what: str) -> str:
    """`value` quoted for a POSIX shell line.

    Args:
        value: the option value.
        what: how to name it in the error ("--partition").

    Raises:
        ConfigError: `value` holds a control character (a newline would start a new
            command line in the batch script).
    """
    text = str(value)
    if _CONTROL.search(text):
        raise ConfigError("%s %r: control characters (newline, tab, ...) are not allowed"
                          % (what, text))
    return shlex.quote(text)


def check_line(value, what: str) -> str:
    """`value` unchanged when it has no control character (for values that a template
    quotes itself, or Slurm #SBATCH lines, which take no shell quoting).

    Raises:
        ConfigError: as shell_value.
    """
    text = str(value)
    if _CONTROL.search(text):
        raise ConfigError("%s %r: control characters (newline, tab, ...) are not allowed"
                          % (what, text))
    return text


def file_name(value) -> str:
    """A file name made from `value` that stays inside its folder: characters other
    than letters, digits and ._+- become "_" (no "/" survives) and leading dots are
    dropped: "../../x" -> "_.._x", a plain name inside the folder."""
    name = _NAME_UNSAFE.sub("_", str(value)).lstrip(".")
    return name or "_"
