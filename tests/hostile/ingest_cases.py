"""The catalogue of hostile ingest input: one case per class, each building its files in a
directory and stating what `dp-platform ingest` must do with them.

Every id and every rejected text value in the data carries :data:`SECRET`, so a test can tell
that no raw value reached stderr or the report. The table of classes in docs/data.md §2b is
checked against this catalogue (names and outcomes) by the test module.
"""

from __future__ import annotations

import csv
import gzip
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

SECRET = "SeCrEt"
NOW = "2026-04-01T00:00:00Z"
IMP_HEADER = ["impression_id", "user_id", "publisher_id", "advertiser_id", "ts", "interaction"]
CONV_HEADER = ["conversion_id", "user_id", "advertiser_id", "ts", "value"]
TS = "2026-03-01T10:00:00Z"

Runner = Literal["in_process", "no_read_permission", "file_size_limit"]


@dataclass
class Expect:
    """What one invocation must do. ``exit_code`` 2: one stderr line containing ``message``,
    nothing loaded. ``exit_code`` 0: per kind, rows read and the quarantine reasons counted."""

    impressions: Path
    conversions: Path
    exit_code: int
    message: str = ""
    rows: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    already_loaded: tuple[str, ...] = ()
    extra: list[str] = field(default_factory=list)  # further CLI arguments
    home: Path | None = None  # another home than the shared one
    runner: Runner = "in_process"
    file_size_limit: int = 0


class Workspace:
    """One case's directory with helpers for small, valid event files. ``shared_home`` is the
    home the cases share (beside the case directories by default), ``engine_args`` the
    command-line arguments that choose the warehouse engine (none: the default, DuckDB) and
    ``warehouse`` that engine's ``warehouse:`` block, for a case that writes its own
    catalogue (none: the default)."""

    def __init__(
        self,
        root: Path,
        tag: str,
        *,
        shared_home: Path | None = None,
        engine_args: tuple[str, ...] = (),
        warehouse: dict | None = None,
    ) -> None:
        self.root = root
        self.tag = tag
        self.shared_home = shared_home or root.parent / "shared-home"
        self.engine_args = engine_args
        self.warehouse = warehouse
        root.mkdir(parents=True, exist_ok=True)

    def catalogue(self, dimensions: dict[str, dict]) -> Path:
        """A catalogue declaring ``dimensions`` (name → {source, values}), on this workspace's
        engine."""
        document: dict[str, object] = {
            "accounts": [{"name": "a", "rho_cap": 1}],
            "dimensions": dimensions,
            "campaigns": [
                {"name": "c", "advertiser": "acme", "account": "a", "start": "2026-03-01"}
            ],
        }
        if self.warehouse:
            document["warehouse"] = self.warehouse
        path = self.path("campaigns.yaml")
        path.write_text(yaml.safe_dump(document))
        return path

    def path(self, name: str) -> Path:
        return self.root / name

    def imp(self, k: int, **override: str) -> list[str]:
        row = {
            "impression_id": f"{self.tag}-i{k}-{SECRET}",
            "user_id": f"u{k % 3}-{SECRET}",
            "publisher_id": f"p{k % 2}",
            "advertiser_id": "acme",
            "ts": f"2026-03-01T10:{k % 60:02d}:00Z",
            "interaction": "view",
        }
        row.update(override)
        return [row[c] for c in IMP_HEADER]

    def conv(self, k: int, **override: str) -> list[str]:
        row = {
            "conversion_id": f"{self.tag}-c{k}-{SECRET}",
            "user_id": f"u{k % 3}-{SECRET}",
            "advertiser_id": "acme",
            "ts": f"2026-03-02T10:{k % 60:02d}:00Z",
            "value": "12.5",
        }
        row.update(override)
        return [row[c] for c in CONV_HEADER]

    def csv(self, name: str, header: list[str], rows: list[list[str]]) -> Path:
        path = self.path(name)
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows)
        return path

    def raw(self, name: str, content: bytes) -> Path:
        path = self.path(name)
        path.write_bytes(content)
        return path

    def imps(self, rows: list[list[str]] | None = None, name: str = "imps.csv") -> Path:
        return self.csv(name, IMP_HEADER, rows if rows is not None else [self.imp(1)])

    def convs(self, rows: list[list[str]] | None = None, name: str = "convs.csv") -> Path:
        return self.csv(name, CONV_HEADER, rows if rows is not None else [self.conv(1)])

    def refused(self, message: str, **files: Path) -> Expect:
        return Expect(
            impressions=files.get("impressions") or self.imps(),
            conversions=files.get("conversions") or self.convs(),
            exit_code=2,
            message=message,
        )

    def loaded(
        self,
        *,
        impressions: Path | None = None,
        conversions: Path | None = None,
        rows: tuple[int, int] = (1, 1),
        imp_reasons: dict[str, int] | None = None,
        conv_reasons: dict[str, int] | None = None,
    ) -> Expect:
        return Expect(
            impressions=impressions or self.imps(),
            conversions=conversions or self.convs(),
            exit_code=0,
            rows={"impressions": rows[0], "conversions": rows[1]},
            reasons={"impressions": imp_reasons or {}, "conversions": conv_reasons or {}},
        )


@dataclass(frozen=True)
class Case:
    name: str
    outcome: str  # as written in docs/data.md
    build: Callable[[Workspace], Expect]


CASES: list[Case] = []


def case(name: str, outcome: str) -> Callable[[Callable[[Workspace], Expect]], Callable]:
    def register(build: Callable[[Workspace], Expect]) -> Callable[[Workspace], Expect]:
        CASES.append(Case(name, outcome, build))
        return build

    return register


def _parquet(path: Path, columns: dict[str, pa.Array]) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def _imp_columns(w: Workspace, n: int = 2) -> dict[str, pa.Array]:
    rows = [w.imp(k) for k in range(n)]
    columns = {name: pa.array([r[i] for r in rows]) for i, name in enumerate(IMP_HEADER)}
    columns["ts"] = pa.array([datetime(2026, 3, 1, 10, k) for k in range(n)], pa.timestamp("us"))
    return columns


# -- the files themselves ---------------------------------------------------------------------


@case("missing_impressions_file", "refused: not found")
def _(w: Workspace) -> Expect:
    return w.refused("impressions file", impressions=w.path("nope.csv")) | _msg(": not found")


@case("missing_conversions_file", "refused: not found")
def _(w: Workspace) -> Expect:
    return w.refused("conversions file", conversions=w.path("nope.csv")) | _msg(": not found")


@case("directory_given_as_file", "refused: is a directory")
def _(w: Workspace) -> Expect:
    folder = w.path("folder.csv")
    folder.mkdir()
    return w.refused("is a directory, not a file", impressions=folder)


@case("symbolic_link_loop", "refused: cannot be opened (a symbolic link loop)")
def _(w: Workspace) -> Expect:
    os.symlink(w.path("b.csv"), w.path("a.csv"))
    os.symlink(w.path("a.csv"), w.path("b.csv"))
    return w.refused("cannot be opened (a symbolic link loop)", impressions=w.path("a.csv"))


@case("dangling_symbolic_link", "refused: not found (a symbolic link to nothing)")
def _(w: Workspace) -> Expect:
    os.symlink(w.path("gone.csv"), w.path("link.csv"))
    return w.refused("not found (a symbolic link to nothing)", conversions=w.path("link.csv"))


@case("path_through_a_file", "refused: not found (part of the path is a file)")
def _(w: Workspace) -> Expect:
    plain = w.raw("plain.csv", b"x")
    return w.refused("part of the path is a file", impressions=plain / "inner.csv")


@case("named_pipe_given_as_file", "refused: not a regular file (never opened, cannot hang)")
def _(w: Workspace) -> Expect:
    os.mkfifo(w.path("pipe.csv"))
    return w.refused("not a regular file", impressions=w.path("pipe.csv"))


@case("device_given_as_file", "refused: not a regular file")
def _(w: Workspace) -> Expect:
    os.symlink("/dev/zero", w.path("zero.csv"))
    return w.refused("not a regular file", conversions=w.path("zero.csv"))


@case("unreadable_file", "refused: cannot be read (Permission denied)")
def _(w: Workspace) -> Expect:
    imps = w.imps()
    imps.chmod(0)
    expect = w.refused("cannot be read (Permission denied)", impressions=imps)
    expect.runner = "no_read_permission"
    return expect


@case("unknown_extension", "refused: unknown format")
def _(w: Workspace) -> Expect:
    return w.refused("unknown format", impressions=w.raw("events.json", b"{}"))


@case("no_extension", "refused: unknown format")
def _(w: Workspace) -> Expect:
    return w.refused("unknown format", conversions=w.raw("conversions", b"conversion_id\n"))


@case("file_name_with_newline", "refused on one line, the newline shown as \\n")
def _(w: Workspace) -> Expect:
    return w.refused("two\\nlines.csv: not found", impressions=w.path("two\nlines.csv"))


@case("file_name_with_quote", "loaded (the name is quoted safely in SQL)")
def _(w: Workspace) -> Expect:
    return w.loaded(impressions=w.imps(name="it's.csv"))


@case("same_file_for_both_kinds", "refused: conversions file missing column(s)")
def _(w: Workspace) -> Expect:
    imps = w.imps()
    return w.refused("conversions file", impressions=imps, conversions=imps) | _msg(
        "missing column(s) conversion_id"
    )


# -- containers and headers -------------------------------------------------------------------


@case("empty_csv", "refused: empty file, no header row")
def _(w: Workspace) -> Expect:
    return w.refused("empty file, no header row", impressions=w.raw("empty.csv", b""))


@case("empty_parquet", "refused: empty file, not Parquet")
def _(w: Workspace) -> Expect:
    return w.refused("empty file, not Parquet", conversions=w.raw("empty.parquet", b""))


@case("garbage_parquet", "refused: not a readable Parquet file")
def _(w: Workspace) -> Expect:
    garbage = w.raw("garbage.parquet", b"PAR1" + SECRET.encode() * 10)
    return w.refused("not a readable Parquet file", impressions=garbage)


@case("truncated_parquet", "refused: not a readable Parquet file")
def _(w: Workspace) -> Expect:
    whole = _parquet(w.path("whole.parquet"), _imp_columns(w, 50))
    cut = w.raw("cut.parquet", whole.read_bytes()[: whole.stat().st_size // 2])
    return w.refused("not a readable Parquet file", impressions=cut)


@case("truncated_gzip_header", "refused: not a readable gzip file")
def _(w: Workspace) -> Expect:
    packed = gzip.compress((",".join(CONV_HEADER) + "\n").encode())
    return w.refused("not a readable gzip file", conversions=w.raw("c.csv.gz", packed[:15]))


@case("not_gzip_but_named_gz", "refused: not a readable gzip file")
def _(w: Workspace) -> Expect:
    return w.refused("not a readable gzip file", impressions=w.raw("i.csv.gz", b"plain text"))


@case("truncated_gzip", "refused: could not be read completely")
def _(w: Workspace) -> Expect:
    # over 1 MiB before the cut, so the header is read and the cut is met by DuckDB's reader
    text = ",".join(IMP_HEADER) + "\n" + "".join(",".join(w.imp(k)) + "\n" for k in range(40_000))
    packed = gzip.compress(text.encode())
    cut = w.raw("cut.csv.gz", packed[: len(packed) // 2])
    return w.refused("could not be read completely", impressions=cut)


@case("binary_file_named_csv", "refused: line 1 (the header row) is not UTF-8 text")
def _(w: Workspace) -> Expect:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    return w.refused("line 1 (the header row) is not UTF-8 text", impressions=w.raw("i.csv", png))


@case("header_not_utf8", "refused: line 1 (the header row) is not UTF-8 text")
def _(w: Workspace) -> Expect:
    latin = (",".join(CONV_HEADER) + ",r\xe9gion\n").encode("latin-1")
    return w.refused("is not UTF-8 text", conversions=w.raw("c.csv", latin))


@case("blank_first_line", "refused: line 1 is blank, a header row was expected")
def _(w: Workspace) -> Expect:
    blank = w.raw("c.csv", ("\n" + ",".join(CONV_HEADER) + "\n").encode())
    return w.refused("line 1 is blank", conversions=blank)


@case("header_longer_than_1_MiB", "refused: line 1 (the header row) is longer than 1 MiB")
def _(w: Workspace) -> Expect:
    wide = ",".join(IMP_HEADER) + "," + ",".join(f"x{k}" for k in range(200_000)) + "\n"
    return w.refused("longer than 1 MiB", impressions=w.raw("wide.csv", wide.encode()))


@case("missing_column_csv", "refused: missing column(s) ts")
def _(w: Workspace) -> Expect:
    header = [c for c in CONV_HEADER if c != "ts"]
    broken = w.csv("c.csv", header, [[*w.conv(1)[:3], "1"]])
    return w.refused("missing column(s) ts", conversions=broken)


@case("missing_column_parquet", "refused: missing column(s) interaction")
def _(w: Workspace) -> Expect:
    columns = _imp_columns(w)
    del columns["interaction"]
    broken = _parquet(w.path("i.parquet"), columns)
    return w.refused("missing column(s) interaction", impressions=broken)


@case("wrong_delimiter", "refused: missing column(s) (the header is one column)")
def _(w: Workspace) -> Expect:
    semi = ";".join(IMP_HEADER) + "\n" + ";".join(w.imp(1)) + "\n"
    return w.refused("missing column(s) impression_id", impressions=w.raw("i.csv", semi.encode()))


@case("header_names_in_upper_case", "refused: missing column(s) (names are case-sensitive)")
def _(w: Workspace) -> Expect:
    upper = w.csv("i.csv", [c.upper() for c in IMP_HEADER], [w.imp(1)])
    return w.refused("missing column(s) impression_id", impressions=upper)


@case("repeated_required_column", "refused: column(s) ts appear more than once")
def _(w: Workspace) -> Expect:
    twice = w.csv("i.csv", [*IMP_HEADER, "ts"], [[*w.imp(1), TS]])
    return w.refused("column(s) ts appear more than once", impressions=twice)


@case("parquet_integer_timestamps", "refused: column ts has type BIGINT")
def _(w: Workspace) -> Expect:
    columns = _imp_columns(w)
    columns["ts"] = pa.array([1_772_359_200, 1_772_359_260], pa.int64())
    return w.refused(
        "column ts has type BIGINT (expected text, date or timestamp)",
        impressions=_parquet(w.path("i.parquet"), columns),
    )


@case("parquet_float_ids", "refused: column user_id has type DOUBLE")
def _(w: Workspace) -> Expect:
    columns = _imp_columns(w)
    columns["user_id"] = pa.array([1.5, 2.5])
    return w.refused(
        "column user_id has type DOUBLE (expected text or integer)",
        impressions=_parquet(w.path("i.parquet"), columns),
    )


@case("parquet_nested_ids", "refused: column user_id has type STRUCT")
def _(w: Workspace) -> Expect:
    columns = _imp_columns(w)
    columns["user_id"] = pa.array([{"id": SECRET}, {"id": SECRET}])
    return w.refused(
        "column user_id has type STRUCT", impressions=_parquet(w.path("i.parquet"), columns)
    )


@case("parquet_boolean_interaction", "refused: column interaction has type BOOLEAN")
def _(w: Workspace) -> Expect:
    columns = _imp_columns(w)
    columns["interaction"] = pa.array([True, False])
    return w.refused(
        "column interaction has type BOOLEAN", impressions=_parquet(w.path("i.parquet"), columns)
    )


@case("unterminated_quote", "refused: line 3: a quoted field is not closed")
def _(w: Workspace) -> Expect:
    lines = [",".join(IMP_HEADER), ",".join(w.imp(1)), ",".join(w.imp(2)).replace("u", '"u', 1)]
    lines.append(",".join(w.imp(3)))
    broken = w.raw("i.csv", ("\n".join(lines) + "\n").encode())
    return w.refused("line 3: a quoted field is not closed", impressions=broken)


@case("text_after_closing_quote", "refused: line 2: a quoted field is not closed (or text follows)")
def _(w: Workspace) -> Expect:
    row = w.conv(1)
    row[1] = f'"{row[1]}"x'
    text = ",".join(CONV_HEADER) + "\n" + ",".join(row) + "\n" + ",".join(w.conv(2)) + "\n"
    return w.refused(
        "line 2: a quoted field is not closed", conversions=w.raw("c.csv", text.encode())
    )


# -- the command line and the warehouse ------------------------------------------------------


@case("now_not_a_date", "refused: --now: not an ISO date-time")
def _(w: Workspace) -> Expect:
    return w.refused("--now: not an ISO date-time") | _extra("--now", f"soon-{SECRET}")


@case("now_year_3000", "refused: --now: outside the accepted time window")
def _(w: Workspace) -> Expect:
    return w.refused("--now: outside the accepted time window") | _extra("--now", "3000-01-01")


@case("now_before_1970", "refused: --now: outside the accepted time window")
def _(w: Workspace) -> Expect:
    return w.refused("outside the accepted time window") | _extra("--now", "1900-01-01T00:00:00")


@case("now_with_a_newline", "refused on one line: --now: not an ISO date-time")
def _(w: Workspace) -> Expect:
    return w.refused("--now: not an ISO date-time") | _extra("--now", "2026-01-01\nrm -rf /")


@case("home_is_a_file", "refused: --home exists and is not a directory")
def _(w: Workspace) -> Expect:
    expect = w.refused("exists and is not a directory")
    expect.home = w.raw("home", b"not a directory")
    return expect


@case("home_inside_a_file", "refused: --home cannot be used (Not a directory)")
def _(w: Workspace) -> Expect:
    expect = w.refused("cannot be used (Not a directory)")
    expect.home = w.raw("plain", b"x") / "home"
    return expect


@case("warehouse_file_not_duckdb", "refused: warehouse ingest failed; nothing loaded")
def _(w: Workspace) -> Expect:
    expect = w.refused("warehouse.duckdb: ingest failed")
    expect.home = w.path("home")
    expect.home.mkdir()
    (expect.home / "warehouse.duckdb").write_bytes(SECRET.encode() * 1000)
    return expect


@case("disk_full_while_loading", "refused: could not write (File too large); warehouse unchanged")
def _(w: Workspace) -> Expect:
    rows = [w.imp(k) for k in range(20_000)]
    expect = w.refused("could not write (File too large); nothing was loaded")
    expect.impressions = w.imps(rows)
    expect.runner = "file_size_limit"
    expect.file_size_limit = 64 * 1024
    return expect


# -- rows -------------------------------------------------------------------------------------


@case("header_only", "loaded: 0 rows")
def _(w: Workspace) -> Expect:
    return w.loaded(impressions=w.imps([]), conversions=w.convs([]), rows=(0, 0))


@case("byte_order_mark", "loaded: the BOM is not part of the first column's name")
def _(w: Workspace) -> Expect:
    text = "\ufeff" + ",".join(IMP_HEADER) + "\n" + ",".join(w.imp(1)) + "\n"
    return w.loaded(impressions=w.raw("i.csv", text.encode()))


@case("crlf_line_ends", "loaded")
def _(w: Workspace) -> Expect:
    text = ",".join(CONV_HEADER) + "\r\n" + ",".join(w.conv(1)) + "\r\n"
    return w.loaded(conversions=w.raw("c.csv", text.encode()))


@case("cr_only_line_ends", "loaded")
def _(w: Workspace) -> Expect:
    text = ",".join(IMP_HEADER) + "\r" + "".join(",".join(w.imp(k)) + "\r" for k in range(2))
    return w.loaded(impressions=w.raw("i.csv", text.encode()), rows=(2, 1))


@case("gzip_csv", "loaded")
def _(w: Workspace) -> Expect:
    text = ",".join(IMP_HEADER) + "\n" + "".join(",".join(w.imp(k)) + "\n" for k in range(3))
    return w.loaded(impressions=w.raw("i.csv.gz", gzip.compress(text.encode())), rows=(3, 1))


@case("extra_and_unnamed_columns", "loaded: ignored")
def _(w: Workspace) -> Expect:
    rows = [[*w.imp(1), f"x-{SECRET}", ""]]
    return w.loaded(impressions=w.csv("i.csv", [*IMP_HEADER, "note", ""], rows))


@case("columns_in_another_order", "loaded")
def _(w: Workspace) -> Expect:
    order = list(reversed(CONV_HEADER))
    return w.loaded(conversions=w.csv("c.csv", order, [list(reversed(w.conv(1)))]))


@case("too_many_fields", "quarantined: malformed_row")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1), [*w.imp(2), "extra"]]
    return w.loaded(impressions=w.imps(rows), rows=(2, 1), imp_reasons={"malformed_row": 1})


@case("too_few_fields", "quarantined: malformed_row")
def _(w: Workspace) -> Expect:
    rows = [w.conv(1)[:3], w.conv(2)]
    return w.loaded(conversions=w.convs(rows), rows=(1, 2), conv_reasons={"malformed_row": 1})


@case("row_not_utf8", "quarantined: malformed_row")
def _(w: Workspace) -> Expect:
    text = ",".join(IMP_HEADER) + "\n" + ",".join(w.imp(1)) + "\n"
    bad = ",".join(w.imp(2)).replace("u", "\xe9", 1) + "\n"
    data = text.encode() + bad.encode("latin-1")
    imps = w.raw("i.csv", data)
    return w.loaded(impressions=imps, rows=(2, 1), imp_reasons={"malformed_row": 1})


@case("line_over_2_MB", "quarantined: malformed_row; the rows after it load")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1, user_id=SECRET * 600_000), w.imp(2)]
    return w.loaded(impressions=w.imps(rows), rows=(2, 1), imp_reasons={"malformed_row": 1})


@case("long_id_100_kB", "loaded: ids are opaque text")
def _(w: Workspace) -> Expect:
    return w.loaded(impressions=w.imps([w.imp(1, user_id=SECRET * 17_000)]))


@case("control_characters_in_ids", "loaded: ids are opaque text")
def _(w: Workspace) -> Expect:
    return w.loaded(impressions=w.imps([w.imp(1, user_id=f"u\x00\x07\t-{SECRET}")]))


@case("quoted_line_break_in_field", "loaded: one record")
def _(w: Workspace) -> Expect:
    return w.loaded(impressions=w.imps([w.imp(1, user_id=f"u\n{SECRET}"), w.imp(2)]), rows=(2, 1))


@case("sql_in_ids", "loaded: ids are data, never SQL")
def _(w: Workspace) -> Expect:
    sneaky = f"x'); DROP TABLE impressions; --{SECRET}"
    return w.loaded(impressions=w.imps([w.imp(1, user_id=sneaky)]))


@case("blank_or_space_only_fields", "quarantined: missing_<column>")
def _(w: Workspace) -> Expect:
    rows = [
        w.imp(1, impression_id=""),
        w.imp(2, user_id="   "),
        w.imp(3, publisher_id="\u00a0"),
        w.imp(4, advertiser_id="\u3000"),
        w.imp(5, ts=" "),
        w.imp(6, interaction=""),
    ]
    reasons = {
        "missing_impression_id": 1,
        "missing_user_id": 1,
        "missing_publisher_id": 1,
        "missing_advertiser_id": 1,
        "missing_ts": 1,
        "missing_interaction": 1,
    }
    return w.loaded(impressions=w.imps(rows), rows=(6, 1), imp_reasons=reasons)


@case("ids_padded_with_unicode_spaces", "trimmed: the padded copy is duplicate_in_load")
def _(w: Workspace) -> Expect:
    plain = w.conv(1)
    padded = w.conv(2, conversion_id=f"\u00a0{plain[0]}\u2003", user_id=plain[1])
    return w.loaded(
        conversions=w.convs([plain, padded]), rows=(1, 2), conv_reasons={"duplicate_in_load": 1}
    )


@case("unknown_interaction", "quarantined: unknown_interaction")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1, interaction=f"hover-{SECRET}")]
    return w.loaded(impressions=w.imps(rows), imp_reasons={"unknown_interaction": 1})


@case("interaction_case_and_spaces", "loaded: ' CLICK ' is click")
def _(w: Workspace) -> Expect:
    return w.loaded(impressions=w.imps([w.imp(1, interaction=" CLICK ")]))


@case("unparsable_timestamp", "quarantined: unparsable_ts")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1, ts=f"yesterday-{SECRET}")]
    return w.loaded(impressions=w.imps(rows), imp_reasons={"unparsable_ts": 1})


@case("impossible_date", "quarantined: unparsable_ts (30 February)")
def _(w: Workspace) -> Expect:
    rows = [w.conv(1, ts="2026-02-30T10:00:00Z")]
    return w.loaded(conversions=w.convs(rows), conv_reasons={"unparsable_ts": 1})


@case("epoch_number_as_timestamp", "quarantined: unparsable_ts")
def _(w: Workspace) -> Expect:
    rows = [w.conv(1, ts="1772359200")]
    return w.loaded(conversions=w.convs(rows), conv_reasons={"unparsable_ts": 1})


@case("offset_not_a_time", "quarantined: unparsable_ts")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1, ts="2026-03-01T10:00:00+ab:cd")]
    return w.loaded(impressions=w.imps(rows), imp_reasons={"unparsable_ts": 1})


@case("timestamp_year_1600", "quarantined: ts_out_of_range (would overflow the ordering key)")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1, ts="1600-01-01T00:00:00Z"), w.imp(2)]
    return w.loaded(impressions=w.imps(rows), rows=(2, 1), imp_reasons={"ts_out_of_range": 1})


@case("timestamp_minus_infinity", "quarantined: ts_out_of_range")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1, ts="-infinity"), w.imp(2)]
    return w.loaded(impressions=w.imps(rows), rows=(2, 1), imp_reasons={"ts_out_of_range": 1})


@case("timestamp_infinity", "quarantined: ts_out_of_range")
def _(w: Workspace) -> Expect:
    rows = [w.conv(1, ts="infinity")]
    return w.loaded(conversions=w.convs(rows), conv_reasons={"ts_out_of_range": 1})


@case("timestamp_year_2250", "quarantined: ts_out_of_range (before the future check)")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1, ts="2250-01-01T00:00:00Z")]
    return w.loaded(impressions=w.imps(rows), imp_reasons={"ts_out_of_range": 1})


@case("timestamp_just_before_1970", "quarantined: ts_out_of_range; 1970-01-01T00:00Z loads")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1, ts="1969-12-31T23:59:59.999999Z"), w.imp(2, ts="1970-01-01T00:00:00Z")]
    return w.loaded(impressions=w.imps(rows), rows=(2, 1), imp_reasons={"ts_out_of_range": 1})


@case("parquet_timestamp_year_1600", "quarantined: ts_out_of_range")
def _(w: Workspace) -> Expect:
    columns = _imp_columns(w)
    columns["ts"] = pa.array([datetime(1600, 1, 1), datetime(2026, 3, 1)], pa.timestamp("us"))
    parquet = _parquet(w.path("i.parquet"), columns)
    return w.loaded(impressions=parquet, rows=(2, 1), imp_reasons={"ts_out_of_range": 1})


@case("future_conversion", "quarantined: future_ts")
def _(w: Workspace) -> Expect:
    rows = [w.conv(1, ts="2026-04-01T00:00:01Z"), w.conv(2)]
    return w.loaded(conversions=w.convs(rows), rows=(1, 2), conv_reasons={"future_ts": 1})


@case("mixed_time_zones", "loaded: offsets converted to UTC")
def _(w: Workspace) -> Expect:
    rows = [
        w.imp(1, ts="2026-03-01T12:00:00+02:00"),
        w.imp(2, ts="2026-03-01T05:00:00-05:00"),
        w.imp(3, ts="2026-03-01 10:00:00"),
    ]
    return w.loaded(impressions=w.imps(rows), rows=(3, 1))


@case("date_without_time", "loaded: midnight UTC")
def _(w: Workspace) -> Expect:
    return w.loaded(conversions=w.convs([w.conv(1, ts="2026-03-02")]))


@case("nan_value", "quarantined: unparsable_value")
def _(w: Workspace) -> Expect:
    return w.loaded(conversions=w.convs([w.conv(1, value="NaN")]), conv_reasons=_value())


@case("infinite_value", "quarantined: unparsable_value")
def _(w: Workspace) -> Expect:
    return w.loaded(conversions=w.convs([w.conv(1, value="-inf")]), conv_reasons=_value())


@case("value_overflowing_double", "quarantined: unparsable_value")
def _(w: Workspace) -> Expect:
    return w.loaded(conversions=w.convs([w.conv(1, value="1e400")]), conv_reasons=_value())


@case("value_with_decimal_comma", "quarantined: unparsable_value")
def _(w: Workspace) -> Expect:
    return w.loaded(conversions=w.convs([w.conv(1, value="12,5")]), conv_reasons=_value())


@case("value_as_text", "quarantined: unparsable_value")
def _(w: Workspace) -> Expect:
    rows = [w.conv(1, value=f"lots-{SECRET}")]
    return w.loaded(conversions=w.convs(rows), conv_reasons=_value())


@case("negative_value", "quarantined: negative_value")
def _(w: Workspace) -> Expect:
    rows = [w.conv(1, value="-0.01")]
    return w.loaded(conversions=w.convs(rows), conv_reasons={"negative_value": 1})


@case("value_left_empty", "loaded: value is optional")
def _(w: Workspace) -> Expect:
    return w.loaded(conversions=w.convs([w.conv(1, value="")]))


@case("parquet_nan_value", "quarantined: unparsable_value")
def _(w: Workspace) -> Expect:
    rows = [w.conv(k) for k in range(2)]
    columns = {name: pa.array([r[i] for r in rows]) for i, name in enumerate(CONV_HEADER)}
    columns["value"] = pa.array([float("nan"), 3.0])
    convs = _parquet(w.path("c.parquet"), columns)
    return w.loaded(conversions=convs, rows=(1, 2), conv_reasons=_value())


@case("parquet_nulls", "quarantined: missing_<column>")
def _(w: Workspace) -> Expect:
    columns = _imp_columns(w)
    columns["user_id"] = pa.array([None, "u1"], pa.string())
    columns["ts"] = pa.array([datetime(2026, 3, 1), None], pa.timestamp("us"))
    parquet = _parquet(w.path("i.parquet"), columns)
    reasons = {"missing_user_id": 1, "missing_ts": 1}
    return w.loaded(impressions=parquet, rows=(2, 1), imp_reasons=reasons)


@case("parquet_other_column_types", "loaded: integer ids, date and nanosecond times")
def _(w: Workspace) -> Expect:
    columns = _imp_columns(w)
    columns["user_id"] = pa.array([7, 8], pa.int64())
    columns["ts"] = pa.array([date(2026, 3, 1), date(2026, 3, 2)], pa.date32())
    imps = _parquet(w.path("i.parquet"), columns)
    rows = [w.conv(k) for k in range(2)]
    convs = {name: pa.array([r[i] for r in rows]) for i, name in enumerate(CONV_HEADER)}
    convs["ts"] = pa.array([datetime(2026, 3, 2, tzinfo=UTC)] * 2, pa.timestamp("ns", tz="UTC"))
    convs["value"] = pa.array([1, 2], pa.int32())
    return w.loaded(impressions=imps, conversions=_parquet(w.path("c.parquet"), convs), rows=(2, 2))


@case("duplicate_id_in_file", "quarantined: duplicate_in_load (first copy kept)")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1), w.imp(1, publisher_id="p9"), w.imp(2)]
    return w.loaded(impressions=w.imps(rows), rows=(3, 1), imp_reasons={"duplicate_in_load": 1})


@case("duplicate_id_of_loaded_data", "quarantined: duplicate_loaded")
def _(w: Workspace) -> Expect:
    from dp_platform.cli import main

    first = w.convs([w.conv(1)], name="first.csv")
    w.imps([w.imp(1)], name="first_imps.csv")
    assert main(_argv(w, w.path("first_imps.csv"), first)) == 0
    again = w.convs([w.conv(1, value="3"), w.conv(2)], name="again.csv")
    imps = w.imps([w.imp(7)], name="more_imps.csv")
    return w.loaded(
        impressions=imps, conversions=again, rows=(1, 2), conv_reasons={"duplicate_loaded": 1}
    )


@case("id_reused_by_another_user", "loaded: another user's event (ids are unique per user)")
def _(w: Workspace) -> Expect:
    rows = [w.imp(1), w.imp(1, user_id=w.imp(2)[1], publisher_id="p9")]
    return w.loaded(impressions=w.imps(rows), rows=(2, 1))


@case("id_of_another_users_loaded_event", "loaded: another user's event")
def _(w: Workspace) -> Expect:
    from dp_platform.cli import main

    first = w.convs([w.conv(1)], name="first.csv")
    w.imps([w.imp(1)], name="first_imps.csv")
    assert main(_argv(w, w.path("first_imps.csv"), first)) == 0
    again = w.convs([w.conv(1, user_id=w.conv(2)[1], value="3")], name="again.csv")
    return w.loaded(impressions=w.imps([w.imp(7)], name="more_imps.csv"), conversions=again)


@case("same_file_loaded_twice", "nothing added: already_loaded")
def _(w: Workspace) -> Expect:
    from dp_platform.cli import main

    imps, convs = w.imps(), w.convs()
    assert main(_argv(w, imps, convs)) == 0
    expect = w.loaded(impressions=imps, conversions=convs, rows=(0, 0))
    expect.already_loaded = ("impressions", "conversions")
    return expect


@case("same_content_under_another_name", "nothing added: already_loaded")
def _(w: Workspace) -> Expect:
    from dp_platform.cli import main

    imps, convs = w.imps(), w.convs()
    assert main(_argv(w, imps, convs)) == 0
    copy = w.raw("copy.csv", imps.read_bytes())
    expect = w.loaded(impressions=copy, conversions=w.convs([w.conv(5)], name="c5.csv"))
    expect.rows["impressions"] = 0
    expect.already_loaded = ("impressions",)
    return expect


@case("more_than_1024_at_one_instant", "quarantined: too_many_at_instant")
def _(w: Workspace) -> Expect:
    rows = [w.imp(k, user_id=f"crowd-{SECRET}", ts=TS) for k in range(1030)]
    return w.loaded(
        impressions=w.imps(rows), rows=(1030, 1), imp_reasons={"too_many_at_instant": 1030}
    )


@case(
    "impression_dimension_value_not_listed",
    "quarantined: unknown_<dimension>_value / missing_<dimension> (impressions column, "
    "catch_all: null)",
)
def _(w: Workspace) -> Expect:
    """A catalogue declares ``creative`` on impressions without a catch-all: a value outside
    its public list and an empty one are quarantined (the value is never shown), the listed
    one loads."""
    header = [*IMP_HEADER, "creative"]
    rows = [
        [*w.imp(0), "banner"],
        [*w.imp(1), f"carousel-{SECRET}"],
        [*w.imp(2), ""],
    ]
    catalogue = w.catalogue(
        {"creative": {"source": "impressions", "values": ["banner", "video"], "catch_all": None}}
    )
    reasons = {"unknown_creative_value": 1, "missing_creative": 1}
    loaded = w.loaded(impressions=w.csv("imps.csv", header, rows), rows=(3, 1), imp_reasons=reasons)
    return loaded | _extra("--config", str(catalogue))


@case(
    "dimension_value_not_listed_with_catch_all",
    "accepted as the catch-all (default other); an empty value: missing_<dimension>",
)
def _(w: Workspace) -> Expect:
    """The default catch-all: an unlisted ``creative`` (impressions) and ``region``
    (conversions) load as ``other``, so the events still count; only an empty value is
    quarantined."""
    imp_header, conv_header = [*IMP_HEADER, "creative"], [*CONV_HEADER, "region"]
    imps = [[*w.imp(0), "banner"], [*w.imp(1), f"carousel-{SECRET}"], [*w.imp(2), " "]]
    convs = [[*w.conv(0), "north"], [*w.conv(1), f"atlantis-{SECRET}"], [*w.conv(2), ""]]
    catalogue = w.catalogue(
        {
            "creative": {"source": "impressions", "values": ["banner", "video"]},
            "region": {"source": "conversions", "values": ["north", "south"]},
        }
    )
    loaded = w.loaded(
        impressions=w.csv("imps.csv", imp_header, imps),
        conversions=w.csv("convs.csv", conv_header, convs),
        rows=(3, 3),
        imp_reasons={"missing_creative": 1},
        conv_reasons={"missing_region": 1},
    )
    return loaded | _extra("--config", str(catalogue))


# -- small helpers ----------------------------------------------------------------------------


def _value() -> dict[str, int]:
    return {"unparsable_value": 1}


def _argv(w: Workspace, impressions: Path, conversions: Path) -> list[str]:
    """A load into the shared home, before the case's own (with the case's engine)."""
    return [
        "ingest",
        "--home",
        str(w.shared_home),
        "--impressions",
        str(impressions),
        "--conversions",
        str(conversions),
        "--now",
        NOW,
        "--json",
        *w.engine_args,
    ]


class _Patch:
    """``expect | _msg(...)`` / ``expect | _extra(...)``: small edits that read as a sentence."""

    def __init__(self, apply: Callable[[Expect], None]) -> None:
        self.apply = apply

    def __ror__(self, expect: Expect) -> Expect:
        self.apply(expect)
        return expect


def _msg(text: str) -> _Patch:
    return _Patch(lambda e: setattr(e, "message", f"{e.message}*{text}"))


def _extra(*args: str) -> _Patch:
    return _Patch(lambda e: e.extra.extend(args))
