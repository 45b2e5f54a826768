#!/usr/bin/env python3
"""Keep docs/experiments/data under its size limit (docs/benchmarks.md, "Data policy").

    .venv/bin/python scripts/pack_experiment_data.py [--dry-run] [DATA_DIR]   # pack
    .venv/bin/python scripts/pack_experiment_data.py --unpack [DATA_DIR]      # restore

Packing is lossless and idempotent:

* bine-sim/ and bine-paper/: scripts/bine_table.py and scripts/bine_paper_tables.py
  (through collkit.report.bine and bine_paper) read a campaign's results.csv and
  metadata.json as they are, so both stay plain there; the metadata's
  `placement` (the host of every rank, written by `collkit run`) goes to
  placements/SHA.json.xz, one file per distinct placement (the campaigns of one
  simulated machine share theirs), and becomes {"packed": "placements/SHA.json.xz"}
  (relative to DATA_DIR); everything else in the metadata stays, on one line;
* elsewhere every metadata.json, and raw files above 16 KiB (JSON, JSON lines, CSV,
  text, logs), are compressed to FILE.xz; Markdown, TOML, rules files (MPICH's JSON
  ones too) and their provenance, scripts and smaller files stay as they are;
* files with the same bytes (the same spec run on several machines) are kept once,
  the others becoming relative symbolic links to it.

--unpack undoes all three and gives back the files byte for byte. Readers in the tree:
data/alltoall-fattree/summarise.py opens X, X.xz or X.gz; scripts/bine_table.py and
scripts/parallel_rings_table.py read results.csv files that stay plain. By hand:
`xz -dc FILE.xz`."""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import sys
from pathlib import Path

LIMIT = 16 * 1024
TABLE_DIRS = ("bine-sim/", "bine-paper/")     # campaigns the table scripts read as they are
RAW = {".json", ".jsonl", ".csv", ".txt", ".log"}
PLACEMENT_MIN = 1024
# Rules files in MPICH's JSON format (collkit tune --format mpich) and every rules
# file's FILE.provenance.json (whose `environment` a `tuned:FILE` run applies):
# usable as they are (`mpi = ["tuned:PATH"]`, docs/tuning-files.md), never compressed.
KEEP = {"tuning/mpich.json", "tuning/h100-r2-mpich.json"}


def default_root() -> Path:
    return Path(__file__).resolve().parents[1] / "docs" / "experiments" / "data"


def xz(data: bytes) -> bytes:
    return lzma.compress(data, format=lzma.FORMAT_XZ, preset=9 | lzma.PRESET_EXTREME)


def keep_plain(root: Path, f: Path) -> bool:
    rel = f.relative_to(root).as_posix()
    if f.is_symlink() or f.suffix not in RAW or rel in KEEP or f.name.endswith(".provenance.json"):
        return True
    if rel.startswith(TABLE_DIRS):
        if f.name in ("results.csv", "metadata.json"):
            return True
    elif f.name == "metadata.json":
        return False
    return f.stat().st_size <= LIMIT


def pack(root: Path, dry: bool) -> int:
    placements: dict[str, bytes] = {}
    moved = compressed = 0
    before = after = 0
    for meta in sorted(m for d in TABLE_DIRS for m in (root / d).rglob("metadata.json")):
        text = meta.read_text()
        d = json.loads(text)
        p = d.get("placement")
        if not isinstance(p, list) or len(json.dumps(p)) < PLACEMENT_MIN:
            continue
        if json.dumps(d, indent=2) + "\n" != text:
            print(f"left alone (not collkit's layout): {meta}", file=sys.stderr)
            continue
        blob = (json.dumps(p, indent=2) + "\n").encode()
        sha = hashlib.sha1(blob).hexdigest()[:12]
        rel = f"placements/{sha}.json.xz"
        placements[rel] = blob
        d["placement"] = {"packed": rel}
        new = json.dumps(d, separators=(",", ":")) + "\n"   # --unpack re-indents
        before += len(text)
        after += len(new)
        moved += 1
        if not dry:
            meta.write_text(new)
    for rel, blob in placements.items():
        after += len(xz(blob))
        if not dry:
            (root / rel).parent.mkdir(exist_ok=True)
            (root / rel).write_bytes(xz(blob))
    for f in sorted(root.rglob("*")):
        if not f.is_file() or keep_plain(root, f):
            continue
        data = f.read_bytes()
        packed = xz(data)
        before += len(data)
        after += len(packed)
        compressed += 1
        if not dry:
            f.with_name(f.name + ".xz").write_bytes(packed)
            f.unlink()
    linked = 0
    groups: dict[str, list[Path]] = {}
    for f in sorted(root.rglob("*")):
        if f.is_file() and not f.is_symlink() and f.stat().st_size > 0:
            groups.setdefault(hashlib.sha1(f.read_bytes()).hexdigest(), []).append(f)
    for files in groups.values():
        for f in files[1:]:
            before += f.stat().st_size
            linked += 1
            if not dry:
                f.unlink()
                f.symlink_to(os.path.relpath(files[0], f.parent))
    print(f"{moved} placements moved into {len(placements)} files, {compressed} files compressed, "
          f"{linked} duplicates linked: {before:,} -> {after:,} bytes")
    return 0


def unpack(root: Path) -> int:
    n = 0
    for f in sorted(root.rglob("*")):
        if f.is_symlink():
            data = f.read_bytes()
            f.unlink()
            f.write_bytes(data)
            n += 1
    for meta in sorted(root.rglob("metadata.json")):
        d = json.loads(meta.read_text())
        p = d.get("placement")
        if isinstance(p, dict) and "packed" in p:
            d["placement"] = json.loads(lzma.decompress((root / p["packed"]).read_bytes()))
            meta.write_text(json.dumps(d, indent=2) + "\n")
            n += 1
    for f in sorted(root.rglob("*.xz")):
        if f.parent.name == "placements" and f.parent.parent == root:
            continue
        f.with_name(f.name[:-3]).write_bytes(lzma.decompress(f.read_bytes()))
        f.unlink()
        n += 1
    print(f"{n} files restored")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", type=Path, default=default_root())
    ap.add_argument("--unpack", action="store_true", help="restore the files as they were")
    ap.add_argument("--dry-run", action="store_true", help="report what packing would do")
    ns = ap.parse_args(argv)
    if not ns.root.is_dir():
        print(f"pack_experiment_data: no directory {ns.root}", file=sys.stderr)
        return 2
    return unpack(ns.root) if ns.unpack else pack(ns.root, ns.dry_run)


if __name__ == "__main__":
    sys.exit(main())
