"""`collkit model` and `collkit tune`: cost models fitted to a campaign, decisions with
cutoffs where the models cross, and tuning files for Open MPI, MPICH and libcollkit's
own rules format (docs/tuning.md)."""
