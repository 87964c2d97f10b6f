"""make report: run sprig's benchmarks, keep their @bench lines, plot them."""
