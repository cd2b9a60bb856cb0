"""tftrace's tab in TensorBoard: each profiled run's report, diffs between runs, links to the Profile tab."""
