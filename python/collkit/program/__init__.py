"""The loop that starts and ends at the user's own program: profile, spec
--from-profile, predict, trial, replay (docs/application-loop.md)."""
