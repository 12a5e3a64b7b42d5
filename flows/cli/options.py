"""Command-line options made from the parameter models: one declaration per option, the field.

A field ``name`` becomes ``--name`` (dest ``name``; a required field a required option): its
description is the help, its default is shown, and its type gives the parsing (``bool`` a flag,
``int`` a number, an ``Enum`` its values as choices, ``str`` the text, a ``list`` a repeatable
option). A :class:`flows.params.cli.Cli` in the field's annotation says where the command line
differs (another flag or dest, a metavar, a repeatable option that is not a list, a parser).
An option left out is ``None`` (``[]`` when repeatable), so only what the user gave becomes an
explicitly-set field: resume compares those with the run's own.
"""

from __future__ import annotations

import argparse
import types
from enum import Enum
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from flows.params.cli import Cli
from flows.params.storage import StorageAccess

_PLAIN = Cli()
M = TypeVar("M", bound=BaseModel)


def cli_of(field: FieldInfo) -> Cli:
    """The field's command-line metadata (the last ``Cli`` in its annotation), or none."""
    return next((item for item in reversed(field.metadata) if isinstance(item, Cli)), _PLAIN)


def dest_of(name: str, field: FieldInfo) -> str:
    """Where argparse keeps the field's option."""
    return cli_of(field).dest or name


def add_model_options(parser: argparse.ArgumentParser, model: type[BaseModel]) -> None:
    """One option per field of ``model``, in the form's order."""
    for name, field in model.model_fields.items():
        add_field_option(parser, name, field)


def add_field_option(parser: argparse.ArgumentParser, name: str, field: FieldInfo) -> None:
    """The field's option.

    Raises:
        TypeError: a field whose type has no command-line form and no ``Cli(parse=...)``.
    """
    cli = cli_of(field)
    base = _without_none(field.annotation)
    repeat = cli.append or get_origin(base) is list
    item = get_args(base)[0] if get_origin(base) is list else base
    kwargs: dict[str, Any] = {"help": _help(field, cli, repeat)} | ({"metavar": cli.metavar} if cli.metavar else {})
    if base is bool and not repeat:
        kwargs.update(action="store_true", default=None)
    elif cli.parse is not None or item in (str, int) or _is_union(item) or _is_enum(item):
        kwargs.update(
            type=cli.parse or (int if item is int else None), action="append" if repeat else "store", default=[] if repeat else None
        )
        if _is_enum(item):
            kwargs["choices"] = [member.value for member in item]
            # argparse shows {a,b,c}: a value with a comma (unhealthy,unobserved) read as two choices.
            kwargs.setdefault("metavar", "{" + "|".join(kwargs["choices"]) + "}")
    else:
        raise TypeError(f"{name}: no command-line form for {base!r}; give its annotation a Cli(parse=...)")
    if cli.positional:
        parser.add_argument(name, **{key: value for key, value in kwargs.items() if key not in ("default", "action")})
        return
    flag = cli.flag or f"--{name.replace('_', '-')}"
    parser.add_argument(flag, dest=dest_of(name, field), required=field.is_required(), **kwargs)


def model_from_args(model: type[M], args: argparse.Namespace) -> M:
    """``model`` from the options given: only those become explicitly-set fields."""
    fields = {name: value for name, field in model.model_fields.items() if (value := option_value(args, name, field)) is not None}
    return model(**fields)


def option_value(args: argparse.Namespace, name: str, field: FieldInfo) -> Any:
    """The field's value as the user gave it, or None when the option was left out.

    Raises:
        GateError: ``--gate`` pairs that name no limit or give no share (one line in the CLI).
    """
    given = getattr(args, dest_of(name, field))
    if given is None or given == []:
        return None
    collect = cli_of(field).collect
    return collect(given) if collect is not None else given


def shown_default(field: FieldInfo) -> str | None:
    """The field's default as ``--help`` shows it; None when there is nothing to show (off, blank, empty)."""
    default = field.get_default(call_default_factory=True)
    if isinstance(default, Enum):
        return str(default.value)
    if isinstance(default, list | tuple):
        return ", ".join(map(str, default)) or None
    if isinstance(default, str | int | float) and not isinstance(default, bool):
        return str(default)
    return None


def _help(field: FieldInfo, cli: Cli, repeat: bool) -> str:
    text = " ".join(part for part in (field.description, cli.note) if part)
    extras = ["repeatable"] if repeat else []
    if (default := shown_default(field)) is not None:
        extras.append(f"replaces the default: {default}" if repeat else f"default: {default}")
    if extras:
        text = f"{text.rstrip('.')} ({'; '.join(extras)})."
    return text.replace("%", "%%")  # argparse formats help with %


def _without_none(annotation: Any) -> Any:
    members = [member for member in get_args(annotation) if member is not type(None)] if _is_union(annotation) else [annotation]
    return members[0] if len(members) == 1 else annotation


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _is_enum(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Enum)


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    """``--storage-option KEY=VALUE`` and ``--aws-credentials-block NAME``, the options of every command that reads storage."""
    add_model_options(parser, StorageAccess)


def storage_options_of(args: argparse.Namespace) -> dict[str, Any]:
    """What a command reads storage with: its ``StorageAccess`` options as given, a named block's credentials merged in."""
    from flows.execution.credentials import storage_options_with  # prefect-aws only when a block is named

    return storage_options_with(model_from_args(StorageAccess, args))
