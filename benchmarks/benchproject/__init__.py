"""The small Django project the benchmarks run in (and start real workers with)."""
