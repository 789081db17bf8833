"""Verification queue: items to verify, leases, judgments, aggregation, quality control,
annotator pages."""
