"""Storage credentials from a Prefect block, merged into the fsspec options in the flow process.

Flow-run parameters are stored in the Prefect database and shown in the UI, so they carry a
block's name, never a secret; the credentials are read here, where the flow runs, and travel
to workers only inside the task payloads (``Location.options``).
"""

from __future__ import annotations

from typing import Any, cast


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


def storage_options_with(options: dict[str, Any], block_name: str | None) -> dict[str, Any]:
    """The options a run's storage uses: the parameters' (endpoint, ...) plus the block's credentials."""
    if block_name is None:
        return options
    from_block = block_storage_options(block_name)
    client_kwargs = {**from_block.pop("client_kwargs", {}), **options.get("client_kwargs", {})}
    merged = {**from_block, **options}
    if client_kwargs:
        merged["client_kwargs"] = client_kwargs
    return merged
