"""``python -m meshtopo`` runs the command line."""

from meshtopo.cli import main

main()
