"""The bench commands' ``--out`` templates: ``{device}`` in a path becomes the measuring device's name."""
from __future__ import annotations

import re
from pathlib import Path

from tspd.records.files import write_json


def device_path(template: str, device: str) -> Path:
    return Path(template.replace("{device}", re.sub(r"[^A-Za-z0-9.-]+", "-", device).strip("-")))


def write_device_file(result: dict, template: str) -> Path:
    return write_json(device_path(template, result["device"]), result, indent=2)
