"""`python -m evaluation` is the `ledgermem` command."""

from evaluation.cli_common import main

main()
