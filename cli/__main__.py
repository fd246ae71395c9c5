"""`python -m ledgermem` is the `ledgermem` command."""

from ledgermem.cli.main import main

main()
