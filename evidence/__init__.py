"""evidence: the pure domain library of evidence-stage.

Bytes, dicts and Pydantic models in; models and dicts out. No Prefect, no fsspec, no clock,
no environment reads. Every NeMo Gym 0.7.0 contract the stage implements lives here.
"""
