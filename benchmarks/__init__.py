"""Benchmarks of ledgermem: per turn, per query and at scale, each against a baseline run in the same process.

Run `python -m benchmarks --help`.
"""
