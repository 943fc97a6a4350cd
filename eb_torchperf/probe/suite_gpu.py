"""GPU micro-suite (registered only when it has benchmarks; see the GPU issue)."""
