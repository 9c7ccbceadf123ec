"""`python -m engram_cli` is the `engram` command (handy where the script is not on PATH)."""

from engram_cli.launch import main

main()
