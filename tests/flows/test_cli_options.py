"""``run``, ``batch``, ``compare`` and ``export`` options made from the parameter models (``flows/cli/options.py``).

Every field is one option with a help line, the option sets that field only, and what ``--help``
says of its default and choices is the model's. Which option sets which field is found by
giving each option alone, so a field the generator left out, or an option that sets nothing,
fails here.
"""

from __future__ import annotations

import argparse
from enum import Enum
from typing import Any

import pytest
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from flows.cli.main import build_parser, main
from flows.cli.options import add_model_options, model_from_args
from flows.params.batch import BatchParams
from flows.params.compare import CompareParams
from flows.params.console import ConsoleParams, RunConsoleParams
from flows.params.export import MlflowExportParams, OtelExportParams
from flows.params.stage import StageParams
from flows.params.storage import StorageAccess

REQUIRED = {
    "run": ["--rollouts", "/job/rollouts.jsonl", "--capture-dir", "/job/model-calls", "--output", "/out"],
    "batch": ["/jobs", "--output", "/out"],
    "compare": ["/out/a", "/out/b"],
    "export mlflow": ["/out/run", "--tracking-uri", "http://127.0.0.1:5000"],
    "export otel": ["/out/run", "--endpoint", "http://127.0.0.1:4318"],
}
MODELS: dict[str, tuple[type[BaseModel], ...]] = {
    "run": (StageParams, RunConsoleParams),
    "batch": (BatchParams, ConsoleParams),
    "compare": (CompareParams,),
    "export mlflow": (MlflowExportParams,),
    "export otel": (OtelExportParams,),
}
COMMANDS = list(MODELS)
"""Each command's models: the flow's parameters first, then the console's options (in no form)."""
# A value each option accepts; any other option takes "x1" (an id, a URL, a glob) or 3 (a number).
SAMPLES = {
    "--ignore-check": "model_call_failed",
    "--gate": "max_lost_share=0.5",
    "--storage-option": "endpoint_url=http://127.0.0.1:5000",
    "--header": "authorization=Bearer x",
}
# Options that apply only beside another (refused alone, issue 35): given with it, which is then not counted.
CONTEXT = {
    "--dask-address": ["--task-runner", "dask"],
    "--dask-workers": ["--task-runner", "dask"],
    **{flag: ["--follow"] for flag in ("--snapshot-every", "--stall-after", "--idle-timeout", "--gate-min-rollouts", "--stop-on-breach")},
}


def _parser(command: str, parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The parser of ``command`` (``export mlflow``: a target's, under ``export``)."""
    first, _, rest = command.partition(" ")
    (subcommands,) = [action for action in (parser or build_parser())._actions if isinstance(action, argparse._SubParsersAction)]
    found: argparse.ArgumentParser = subcommands.choices[first]
    return _parser(rest, found) if rest else found


def _options(command: str) -> list[argparse.Action]:
    return [action for action in _parser(command)._actions if action.option_strings and action.dest != "help"]


def _required(command: str) -> set[str]:
    return set(MODELS[command][0].model_json_schema()["required"])


def _fields(command: str) -> dict[str, FieldInfo]:
    return {name: field for model in MODELS[command] for name, field in model.model_fields.items()}


def _given(command: str, argv: list[str]) -> set[str]:
    """The fields the options set explicitly, beyond the required ones."""
    args = _parser(command).parse_args([*REQUIRED[command], *argv])
    return {name for model in MODELS[command] for name in model_from_args(model, args).model_fields_set} - _required(command)


def _sample(action: argparse.Action) -> list[str]:
    flag = action.option_strings[0]
    if action.nargs == 0:
        return [flag]
    if action.choices:
        return [flag, str(next(iter(action.choices)))]
    return [flag, SAMPLES.get(flag, "3" if action.type in (int, float) else "x1")]


def _fields_of_options(command: str) -> dict[str, argparse.Action]:
    """Field name -> the optional option that sets it (each given alone must set exactly one field)."""
    found: dict[str, argparse.Action] = {}
    for action in (action for action in _options(command) if not action.required):
        context = CONTEXT.get(action.option_strings[0], [])
        given = _given(command, [*context, *_sample(action)]) - _given(command, context)
        assert len(given) == 1, (action.option_strings, given)
        found[given.pop()] = action
    return found


@pytest.mark.parametrize("command", COMMANDS)
def test_every_field_is_one_option_with_a_help_line(command: str) -> None:
    assert _given(command, []) == set()  # an option left out sets nothing (resume compares what was given)
    options = _fields_of_options(command)
    required = _required(command)
    assert set(options) == set(_fields(command)) - required, "a field without an option, or two options for one field"
    positional = [action.dest for action in _parser(command)._actions if not action.option_strings]
    assert {action.dest for action in _options(command) if action.required} | set(positional) == required
    for action in _parser(command)._actions:
        assert (action.help or "").strip(), f"{action.option_strings or action.dest} has no help"


def _default_text(default: Any) -> str | None:
    if isinstance(default, Enum):
        return str(default.value)
    if isinstance(default, list):
        return ", ".join(default) or None
    return None if default is None or isinstance(default, bool | dict | BaseModel) else str(default)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_defaults_and_choices_are_the_models(command: str) -> None:
    fields = _fields(command)
    for name, action in _fields_of_options(command).items():
        field = fields[name]
        assert action.default in (None, []), (name, action.default)  # the model's default applies, unset
        help_text = (action.help or "") % {}  # as argparse prints it
        shown = _default_text(field.get_default(call_default_factory=True))
        if shown is None:
            assert "default:" not in help_text, (name, help_text)
        else:
            assert f"default: {shown})" in help_text, (name, help_text)
        assert help_text.startswith((field.description or "?").rstrip(".")), name
        if isinstance(field.annotation, type) and issubclass(field.annotation, Enum):
            assert action.choices == [member.value for member in field.annotation], name
        else:
            assert action.choices is None, name


def test_options_keep_their_flags_and_dests() -> None:
    """Flag names and dests that scripts and the other commands rely on."""
    flags = {action.option_strings[0]: action.dest for action in _options("run")}
    assert {flag: flags[flag] for flag in ("--ignore-check", "--rollout-id", "--gate", "--storage-option")} == {
        "--ignore-check": "ignored_checks",
        "--rollout-id": "rollout_ids",
        "--gate": "gate_limits",
        "--storage-option": "storage_option",
    }
    assert {action.option_strings[0]: action.dest for action in _options("batch")}["--exclude-glob"] == "exclude_globs"
    repeatable = {action.option_strings[0] for action in _options("run") if isinstance(action, argparse._AppendAction)}
    assert repeatable == {"--rollouts", "--rollout-id", "--ignore-check", "--storage-option", "--gate"}


def test_repeated_options_become_the_fields_values() -> None:
    argv = ["--rollouts", "/job/b.jsonl", "--gate", "max_lost_share=0.1", "--gate", "min_landed_share=0.9"]
    argv += ["--storage-option", "use_ssl=false", "--storage-option", "endpoint_url=http://h", "--max-workers", "3"]
    params = model_from_args(StageParams, _parser("run").parse_args([*REQUIRED["run"], *argv]))
    assert params.rollouts == ["file:///job/rollouts.jsonl", "file:///job/b.jsonl"]
    assert params.gate.named() == {"min_landed_share": 0.9, "max_lost_share": 0.1}
    assert (params.storage_options, params.max_workers) == ({"use_ssl": False, "endpoint_url": "http://h"}, 3)
    one = model_from_args(StageParams, _parser("run").parse_args(REQUIRED["run"]))
    assert one.rollouts == "file:///job/rollouts.jsonl"  # one --rollouts: the one-file form params.json records


def test_run_help_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(action.option_strings[0] in out for action in _options("run"))


def test_a_field_without_a_command_line_form_is_refused() -> None:
    class Unmapped(BaseModel):
        headers: dict[str, str] = Field(default_factory=dict, description="No Cli(parse=...) says how to read it.")

    with pytest.raises(TypeError, match="headers: no command-line form"):
        add_model_options(argparse.ArgumentParser(), Unmapped)


def test_the_score_mask_choices_are_the_evidence_rule() -> None:
    """The parameter's choices and default are ``SCORE_MASKS`` and its default (a second list would drift)."""
    from evidence.models.run import DEFAULT_SCORE_MASK, SCORE_MASKS
    from flows.params.stage import ScoreMask, StageParams

    assert [mask.value for mask in ScoreMask] == list(SCORE_MASKS)
    assert StageParams.model_fields["score_mask"].default.value == DEFAULT_SCORE_MASK


def test_the_follow_settings_need_follow_and_a_follow_takes_the_whole_job() -> None:
    base = {"rollouts": "r.jsonl", "capture_dir": "c", "output": "o"}
    with pytest.raises(ValueError, match="snapshot_every and stop_on_breach apply to follow only: add --follow"):
        StageParams(**base, snapshot_every=5, stop_on_breach=True)
    with pytest.raises(ValueError, match="follow processes the whole job"):
        StageParams(**base, follow=True, rollout_ids=["0-1"])
    with pytest.raises(ValueError, match="would start a local Dask cluster each time"):
        StageParams(**base, follow=True, task_runner="dask")
    assert StageParams(**base, follow=True, snapshot_every=5).snapshot_every == 5


def _storage_commands() -> dict[str, argparse.ArgumentParser]:
    """Every command (export's targets one by one) that reads or writes storage: those with ``--storage-option``."""
    found = {}
    for name, parser in _parser("export")._actions[-1].choices.items():  # type: ignore[union-attr]
        found[f"export {name}"] = parser
    (subcommands,) = [action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)]
    found |= {name: parser for name, parser in subcommands.choices.items() if name != "export"}
    return {name: parser for name, parser in found.items() if "--storage-option" in parser._option_string_actions}


def test_every_command_that_reads_storage_has_the_storage_access_options() -> None:
    """One declaration (``StorageAccess``): the same flags, dests and help wherever storage is read."""
    reference = argparse.ArgumentParser()
    add_model_options(reference, StorageAccess)
    expected = {
        flag: (action.dest, action.help, action.metavar) for flag, action in reference._option_string_actions.items() if flag != "-h"
    }
    commands = _storage_commands()
    assert {"run", "batch", "compare", "export mlflow", "export otel", "report", "tables", "select", "health", "export-atif"} <= set(
        commands
    )
    for name, parser in commands.items():
        actions = parser._option_string_actions
        assert {flag: (actions[flag].dest, actions[flag].help, actions[flag].metavar) for flag in expected} == expected, name
        if name in REQUIRED:
            args = parser.parse_args([*REQUIRED[name], "--aws-credentials-block", "s3-block", "--storage-option", "use_ssl=false"])
            access = model_from_args(StorageAccess, args)
            assert (access.aws_credentials_block, access.storage_options) == ("s3-block", {"use_ssl": False}), name


def test_compare_keeps_its_urls_as_given_and_refuses_a_mistyped_one_while_parsing(capsys: pytest.CaptureFixture[str]) -> None:
    args = _parser("compare").parse_args(["runs/a", "s3://b/runs/b", "--seed", "7"])
    assert (args.run_a, args.run_b, model_from_args(CompareParams, args).seed) == ("runs/a", "s3://b/runs/b", 7)
    with pytest.raises(SystemExit) as exit_:
        main(["compare", "s3:/b/runs/a", "runs/b"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("evidence-stage: error: argument RUN_A_URL: malformed URL 's3:/b/runs/a'")
    assert len(err.splitlines()) == 1
    assert main(["compare", "runs/a", "runs/b", "--seed", "-1"]) == 2
    assert capsys.readouterr().err == "evidence-stage: error: invalid parameter seed: Input should be greater than or equal to 0\n"


def test_export_headers_repeat_into_one_mapping() -> None:
    argv = [*REQUIRED["export otel"], "--header", "a=1", "--header", "b=x=y"]
    params = model_from_args(OtelExportParams, _parser("export otel").parse_args(argv))
    assert params.headers == {"a": "1", "b": "x=y"}
    assert params.run_dir == "file:///out/run"
