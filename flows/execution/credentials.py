"""Storage credentials from a Prefect block, merged into the fsspec options in the flow process.

Flow-run parameters are stored in the Prefect database and shown in the UI, so they carry a
block's name, never a secret; the credentials are read here, where the flow runs, and travel
to workers only inside the task payloads (``Location.options``).
"""

from __future__ import annotations

from typing import Any, cast

from flows.params.storage import ReachesStorage


def block_storage_options(block_name: str) -> dict[str, Any]:
    """s3fs options (key, secret, token, profile, region) from the prefect-aws ``AwsCredentials`` block ``block_name``."""
    try:
        from prefect_aws import AwsCredentials
    except ImportError as exc:
        raise RuntimeError("an AWS credentials block needs prefect-aws: pip install 'evidence-stage[aws]'") from exc
    # Prefect's async_dispatch: typed as the coroutine or the value, the value when _sync is passed.
    block = cast("AwsCredentials", AwsCredentials.load(block_name, _sync=True))  # type: ignore[call-arg]
    secret = block.aws_secret_access_key.get_secret_value() if block.aws_secret_access_key else None
    options: dict[str, Any] = {
        "key": block.aws_access_key_id,
        "secret": secret,
        "token": block.aws_session_token,
        "profile": block.profile_name,
    }
    if block.region_name:
        options["client_kwargs"] = {"region_name": block.region_name}
    return {name: value for name, value in options.items() if value is not None}


def storage_options_with(access: ReachesStorage) -> dict[str, Any]:
    """The options storage is read and written with: the parameters' (endpoint, ...) plus the named block's credentials."""
    options = access.storage_options
    if access.aws_credentials_block is None:
        return options
    from_block = block_storage_options(access.aws_credentials_block)
    client_kwargs = {**from_block.pop("client_kwargs", {}), **options.get("client_kwargs", {})}
    merged = {**from_block, **options}
    if client_kwargs:
        merged["client_kwargs"] = client_kwargs
    return merged
