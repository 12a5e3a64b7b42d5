"""What a parameter's command-line option says that its field does not (``flows/cli/options.py``).

A field ``name`` is the option ``--name`` (dest ``name``): its description is the help, its
default is shown, and its type gives the parsing: ``bool`` a flag, ``int`` a number, an ``Enum``
its values as choices, ``str`` the text, a ``list`` a repeatable option. Where the command line
differs, the field's annotation carries a :class:`Cli` (``Annotated[T, Cli(...)]``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cli:
    """A field's command-line option, where it is not the one the field implies."""

    flag: str | None = None
    """The option's name, when not ``--<field-name>`` (``--ignore-check`` for ``ignored_checks``)."""
    dest: str | None = None
    """Its argparse dest, when not the field name (a dest other commands read too)."""
    metavar: str | None = None
    append: bool = False
    """Repeatable, although the field is not a list."""
    parse: Callable[[str], Any] | None = None
    """One given text to one value (argparse's ``type``), when the field's type cannot say how."""
    collect: Callable[[list[Any]], Any] | None = None
    """The values of a repeated option to the field's value (pairs to a dict, say)."""
    note: str = ""
    """What only the command line needs to say, after the description."""
    positional: bool = False


def key_value(text: str) -> tuple[str, str]:
    """``key=value`` as a pair of strings (the value may be empty)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key, value
