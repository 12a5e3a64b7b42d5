"""Where a run reads and writes: URL parameters, and how storage is reached (``StorageAccess``)."""

from __future__ import annotations

import argparse
from typing import Annotated, Any, Protocol

import orjson
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from flows.params.cli import Cli, key_value
from flows.params.fields import OptionalText, blank_is_none
from tasks.inputs.naming import UnsupportedUrl, canonical_url, check_url

# A URL parameter: a local path becomes an absolute ``file://`` URL where the parameters are
# made (CLI, batch, serve, the flow-run process of a UI rerun). A relative path would name
# another file for a Dask worker or a served process in another working directory, and a
# stored parameter must mean the same file whoever reads it.
Url = Annotated[str, AfterValidator(canonical_url)]


def _absolute_or_none(value: str | None) -> str | None:
    return None if value is None else canonical_url(value)


def url_argument(text: str) -> str:
    """A URL argument as given, refused while parsing when its scheme is unsupported or mistyped (``check_url``).

    The commands that take a run directory or a file (``compare``, ``export``, ``report``,
    ``health``, ...) keep the URL as the user spelled it: it is what they print, and what
    ``compare.json`` records; a flow's model makes it absolute (``Url``).
    """
    try:
        return check_url(text)
    except UnsupportedUrl as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


OptionalUrl = Annotated[str | None, BeforeValidator(blank_is_none), AfterValidator(_absolute_or_none), WithJsonSchema({"type": "string"})]

# fsspec option names that carry credentials (s3fs, gcsfs, adlfs, HTTP auth), at any depth.
CREDENTIAL_KEYS = frozenset(
    {
        "key",
        "secret",
        "token",
        "password",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "access_key",
        "secret_key",
        "session_token",
        "account_key",
        "sas_token",
        "client_secret",
        "credentials",
        "auth",
    }
)


def _credential_keys(options: dict[str, Any]) -> set[str]:
    found = {name for name in options if name.lower() in CREDENTIAL_KEYS}
    return found.union(*(_credential_keys(value) for value in options.values() if isinstance(value, dict)))


def refuse_credentials(options: dict[str, Any]) -> dict[str, Any]:
    """Storage options without secrets: parameters are stored by the Prefect server and shown in its UI."""
    found = _credential_keys(options)
    if found:
        raise ValueError(
            f"credentials do not go in storage options ({', '.join(sorted(found))}): "
            "use the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE)"
            " or a Prefect AwsCredentials block (--aws-credentials-block)"
        )
    return options


def storage_option(text: str) -> tuple[str, Any]:
    """``key=value``; the value is parsed as JSON when it is JSON (true, 3, "x"), else kept as text."""
    key, raw = key_value(text)
    try:
        return key, orjson.loads(raw)
    except orjson.JSONDecodeError:
        return key, raw


STORAGE_OPTION = Cli(flag="--storage-option", dest="storage_option", metavar="KEY=VALUE", append=True, parse=storage_option, collect=dict)
"""One ``--storage-option KEY=VALUE`` per option, in every command that reads storage."""

StorageOptions = Annotated[dict[str, Any], AfterValidator(refuse_credentials), STORAGE_OPTION]


class StorageAccess(BaseModel):
    """How a flow or a command reaches storage: fsspec options and a credentials block's name, never a secret.

    Declared here once, as prefect-aws declares ``AwsClientParameters`` once: every flow's model
    takes these two fields from here (``fields.field_of``), so its form and its stored
    parameters keep their flat names, and every command that reads storage has these options.
    """

    model_config = ConfigDict(extra="forbid")

    storage_options: StorageOptions = Field(
        default_factory=dict, title="Storage options", description="fsspec options without credentials, e.g. endpoint_url."
    )
    aws_credentials_block: Annotated[OptionalText, Cli(metavar="NAME")] = Field(
        default=None,
        title="AWS credentials block",
        description="Name of a prefect-aws AwsCredentials block for S3; blank: the environment.",
    )


class ReachesStorage(Protocol):
    """Any model with the ``StorageAccess`` fields: what ``flows.execution.credentials`` resolves."""

    @property
    def storage_options(self) -> dict[str, Any]: ...

    @property
    def aws_credentials_block(self) -> str | None: ...
