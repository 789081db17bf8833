"""Simulated evaluation campaigns: labelled data sets read from disk, simulated annotators, and
the campaigns that measure a design's labels, coverage and bias (``python -m evaluation.simulate``).

Kept out of :mod:`evaluation.core`, which is numbers only: this package reads files and drives the
engine the way the service does. Like the core, it imports no Django.
"""
