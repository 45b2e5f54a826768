"""Analysis: what a user reads back: campaign results and breakdowns, `collkit list`, `collkit check`."""
