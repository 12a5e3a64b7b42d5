"""Pydantic models of the NeMo Gym 0.7.0 contracts, one module per record family."""
