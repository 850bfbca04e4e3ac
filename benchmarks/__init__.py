"""aiload benchmarks: ``python -m benchmarks [--quick] [--only NAME ...]``."""
