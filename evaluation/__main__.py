"""`python -m evaluation` is the `ledgermem` command."""

from evaluation.cli import main

main()
