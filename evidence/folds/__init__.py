"""Run-level folds over per-row digests: pure, streaming reproductions of 0.7.0's run files.

A fold takes one small digest per main row, in file order (computed by the per-attempt engine,
so the reduce never re-reads rows), and produces a document or decisions. Here: the ATIF
acceptance over the run (:class:`AtifAcceptance`), 0.7.0's ``_aggregate_metrics.json``
(:class:`AggregateMetricsFold`, fed by :func:`score_digest`) and the raw-against-clean
``scores.json`` built from two of those documents (:func:`build_scores`).
"""
