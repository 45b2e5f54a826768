"""What a report shows of one campaign, read once: its records, counts, metadata and spec.

Every check of the input happens here, so that bad input stops with one line before
anything is drawn: a directory that is not a campaign, a campaign with no record yet."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from collkit.campaign.record import Counts, Record
from collkit.campaign.store import Campaign
from collkit.common.errors import UserError


@dataclass(frozen=True)
class CampaignData:
    path: Path
    name: str
    description: str
    state: dict
    counts: Counts
    records: list[Record]
    metadata: dict                 # metadata.json ({} while the campaign still runs)
    spec_text: str
    traffic: dict[str, str] = field(default_factory=dict)   # traffic CSV file name -> its text

    @property
    def implausible(self) -> int:
        return sum(1 for r in self.records if r.implausible)

    @property
    def unstable(self) -> int:
        return sum(1 for r in self.records if r.unstable)

    @property
    def title(self) -> str:
        return self.path.name or str(self.path)


def load(path: Path) -> CampaignData:
    if not path.is_dir():
        raise UserError(f"{path} is not a directory; give a campaign directory as `collkit run` made it")
    campaign = Campaign.open(path)
    records = campaign.records()
    if not records:
        raise UserError(f"{path} is an empty campaign (no record in records.jsonl yet); run it first with "
                        f"`collkit run --resume {path}`")
    requested = campaign.resolved().get("requested", {})
    try:
        meta = json.loads((path / "metadata.json").read_text())
        meta = meta if isinstance(meta, dict) else {}
    except (OSError, ValueError):
        meta = {}
    try:
        spec_text = (path / "spec.toml").read_text()
    except (OSError, UnicodeDecodeError):
        spec_text = ""
    # `collkit traffic --jobs DIR --out FILE` tables kept beside the campaign
    traffic = {}
    for csv_path in sorted(path.glob("traffic*.csv")):
        try:
            traffic[csv_path.name] = csv_path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
    return CampaignData(path=path, name=str(requested.get("name", path.name)),
                        description=str(requested.get("description", "")), state=campaign.state(),
                        counts=campaign.counts(), records=records, metadata=meta, spec_text=spec_text,
                        traffic=traffic)


def load_all(paths: list[Path]) -> list[CampaignData]:
    seen = set()
    out = []
    for p in paths:
        key = p.resolve()
        if key in seen:
            raise UserError(f"{p} is given twice; give each campaign directory once")
        seen.add(key)
        out.append(load(p))
    return out
