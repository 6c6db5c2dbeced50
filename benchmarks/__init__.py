"""meshtopo's benchmark suite: ``python -m benchmarks`` runs every ``bench_*.py`` module.

Each module exposes ``main()``, times meshtopo against an anchor measured side by side in the
same process, and prints the ratios. Benchmarks never assert: a missed goal is reported, not
raised. Shared timing and reporting helpers live in ``benchmarks._timing``.
"""
