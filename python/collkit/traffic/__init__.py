"""Traffic analysis: messages traced from the algorithms, counted on a job's
allocation and a machine map (docs/architecture.md, "Traffic analysis")."""
