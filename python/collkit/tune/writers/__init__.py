"""One writer per tuning-file format: openmpi.py (classic rules file, version 1),
mpich.py (JSON selection file), collkit.py (the collkit rules format of docs/preload.md),
sidecar.py (the provenance of every rule, for all formats)."""
