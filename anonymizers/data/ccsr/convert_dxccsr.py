"""Rebuild the DXCCSR files here from AHRQ's CCSR reference workbook.

    python anonymizers/data/ccsr/convert_dxccsr.py DXCCSR-Reference-File-v2023-1.xlsx v2023_1

Reads the workbook's sheets ``DX_to_CCSR_Mapping``, ``CCSR_Categories`` and
``Naming_Conventions`` with the standard library (an .xlsx is zipped XML) and
writes, gzip -9 without a name or time stamp (so the bytes depend only on
the data):

- ``dxccsr_<version>_map.csv.gz``: ``icd10cm,ccsr,default_ip,default_op``, one
  row per (code, category) in the workbook's order; the ICD-10-CM code
  descriptions are left out;
- ``dxccsr_<version>_categories.csv.gz``: ``ccsr,description``;
- ``dxccsr_<version>_body_systems.csv.gz``: ``abbreviation,body_system``.

SOURCES.md says where the workbook came from.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
HERE = Path(__file__).resolve().parent


def _strings(book: zipfile.ZipFile) -> list[str]:
    out = []
    for _, el in ET.iterparse(book.open("xl/sharedStrings.xml")):
        if el.tag == NS + "si":
            out.append("".join(t.text or "" for t in el.iter(NS + "t")))
            el.clear()
    return out


def _sheet_paths(book: zipfile.ZipFile) -> dict[str, str]:
    rels = ET.parse(book.open("xl/_rels/workbook.xml.rels")).getroot()
    target = {r.get("Id"): r.get("Target") for r in rels}
    sheets = ET.parse(book.open("xl/workbook.xml")).getroot().iter(NS + "sheet")
    return {s.get("name"): "xl/" + target[s.get(REL)].lstrip("/").removeprefix("xl/")
            for s in sheets}


def _column(ref: str) -> int:
    n = 0
    for ch in re.match(r"[A-Z]+", ref).group(0):
        n = n * 26 + ord(ch) - 64
    return n - 1


def rows(book: zipfile.ZipFile, sheet: str, strings: list[str]):
    """The sheet's rows as lists of cell text ('' for empty cells)."""
    for _, el in ET.iterparse(book.open(_sheet_paths(book)[sheet])):
        if el.tag != NS + "row":
            continue
        cells = {}
        for c in el.iter(NS + "c"):
            v = c.find(NS + "v")
            if c.get("t") == "inlineStr":
                cells[_column(c.get("r"))] = "".join(x.text or "" for x in c.iter(NS + "t"))
            elif v is not None:
                cells[_column(c.get("r"))] = strings[int(v.text)] if c.get("t") == "s" \
                    else v.text
        el.clear()
        yield [cells.get(i, "").strip() for i in range(max(cells) + 1)] if cells else []


def _write(path: Path, header: list[str], body) -> int:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    n = 0
    for row in body:
        writer.writerow(row)
        n += 1
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", compresslevel=9,
                                                fileobj=raw, mtime=0) as gz:
        gz.write(text.getvalue().encode("utf-8"))
    return n


def _table(book, sheet, strings, header):
    """A sheet's rows after its title row and its header row ``header``."""
    it = rows(book, sheet, strings)
    next(it)  # title
    got = next(it)
    if got[:len(header)] != header:
        raise SystemExit(f"{sheet}: unexpected header {got}")
    return (r for r in it if r)


def main(xlsx: str, version: str) -> None:
    book = zipfile.ZipFile(xlsx)
    strings = _strings(book)
    mapping = _table(book, "DX_to_CCSR_Mapping", strings,
                     ["ICD-10-CM Code", "ICD-10-CM Code Description", "CCSR Category",
                      "CCSR Category Description", "Inpatient Default CCSR (Y/N/X)",
                      "Outpatient Default CCSR (Y/N/X)"])
    n = _write(HERE / f"dxccsr_{version}_map.csv.gz",
               ["icd10cm", "ccsr", "default_ip", "default_op"],
               ([r[0], r[2], r[4], r[5]] for r in mapping))
    cats = _table(book, "CCSR_Categories", strings, ["CCSR Category",
                                                      "CCSR Category Description"])
    k = _write(HERE / f"dxccsr_{version}_categories.csv.gz", ["ccsr", "description"],
               (r[:2] for r in cats))
    systems = _table(book, "Naming_Conventions", strings,
                     ["CCSR for ICD-10-CM Body System", "3-Character Abbreviation"])
    s = _write(HERE / f"dxccsr_{version}_body_systems.csv.gz", ["abbreviation", "body_system"],
               ([r[1], r[0]] for r in systems))
    print(f"{n} mapping rows, {k} categories, {s} body systems")


if __name__ == "__main__":
    main(*sys.argv[1:3])
