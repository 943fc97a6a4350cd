"""Parse the Markdown tables of a rendered report (shared by the report tests)."""

import re

#: A cell separator: a pipe not escaped as "\|".
CELL_SPLIT = re.compile(r"(?<!\\)\|")


def parse_tables(text):
    """Each Markdown table as a list of rows, each row a list of cell texts."""
    found, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append([c.strip() for c in CELL_SPLIT.split(line)[1:-1]])
        elif current:
            found.append(current)
            current = []
    return found
