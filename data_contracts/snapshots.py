"""The snapshot format: one folder per night, Hive-style, written atomically, read consistently.

Layout::

    <root>/<graph>/snapshot=<YYYY-MM-DD>/nodes.parquet    node_id, features, label, extra columns...
                                        /edges.parquet    src, dst[, weight]
                                        /truth.parquet    node_id, true_label   (optional: scoring only)

- ``node_id``: string or integer, unique, never null; stable across snapshots.
- ``features``: ``list<float32>`` (or ``fixed_size_list<float32>[F]``) of one length F for all nodes.
- ``label``: string, null for an unlabelled node. Only known classes carry labels.
- Any other node column is carried through to the outputs untouched.
- Feature names, when the data has them, travel in the Parquet schema metadata of
  ``nodes.parquet`` under ``oral.feature_names`` (a JSON list of F strings).

Writers build the folder under a hidden temporary name and rename it into place, so a reader
never sees a half-written snapshot. Readers read each file's bytes once, hash them, and parse
those same bytes: the snapshot a run trains on is exactly the one its ``content_hash`` names,
even when a file is rewritten while it is being read.

This module needs pyarrow and numpy (and torch for :meth:`Snapshot.tensors`); no orchestration.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from oral_core.columns import feature_matrix as _feature_matrix
from oral_core.columns import index_of

NODES, EDGES, TRUTH = "nodes.parquet", "edges.parquet", "truth.parquet"
PARTITION = "snapshot="
FEATURE_NAMES_KEY = b"oral.feature_names"
_GRAPH_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SnapshotError(ValueError):
    """A snapshot that cannot be found or read: the message names the file and what is wrong."""


class UnreadableFile(SnapshotError):
    """A snapshot file that is missing or cannot be read as Parquet (not Parquet, empty, a
    folder, a codec Arrow lacks, an implausible footer): bad data, which breaks the snapshot's
    contract (rules ``file_present``, ``readable_parquet``) and is reported as such, not a fault
    that reading again could cure."""


def check_graph_name(graph: str) -> str:
    """A graph name is a plain folder name: letters, digits, ``_ . -``; never a path or ``..``."""
    if not isinstance(graph, str) or not _GRAPH_NAME.match(graph) or ".." in graph:
        raise SnapshotError(
            f"invalid graph name {graph!r}: use 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit, and no '..'")
    return graph


#: The one spelling of a snapshot date (``date.fromisoformat`` also takes ``20260131`` and
#: ``2026-W05-6``, which would give one date two folder names).
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def parse_date(value: str | dt.date) -> dt.date:
    """A snapshot date from ``YYYY-MM-DD`` exactly (or a date)."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = str(value)
    if _DATE.match(text):
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            pass
    raise SnapshotError(f"invalid snapshot date {value!r}: expected YYYY-MM-DD")


def snapshot_dir(root: str | Path, graph: str, date: str | dt.date) -> Path:
    """``<root>/<graph>/snapshot=<YYYY-MM-DD>``."""
    return Path(root) / check_graph_name(graph) / f"{PARTITION}{parse_date(date).isoformat()}"


def list_snapshots(root: str | Path, graph: str) -> list[tuple[dt.date, Path]]:
    """Every complete snapshot of ``graph`` under ``root``, oldest first.

    A snapshot is a folder named ``snapshot=YYYY-MM-DD`` with a real date, spelled exactly so.
    Anything else in the graph folder whose name starts with ``snapshot=`` (a bad date, another
    spelling such as ``snapshot=20260131``, a regular file) is a :class:`SnapshotError` naming
    it: skipping it would hide a night, and a second spelling of a date would compete with the
    first. Other entries (writers' hidden ``.tmp-*`` folders, stray files) are ignored."""
    base = Path(root) / check_graph_name(graph)
    if not base.is_dir():
        raise SnapshotError(f"no snapshots for graph {graph!r}: folder {base} does not exist")
    found, bad = [], []
    for child in sorted(base.iterdir()):
        if not child.name.startswith(PARTITION):
            continue
        try:
            day = parse_date(child.name[len(PARTITION):])
        except SnapshotError:
            bad.append(f"{child.name!r} (not snapshot=YYYY-MM-DD with a real date)")
            continue
        if not child.is_dir():
            bad.append(f"{child.name!r} (a file, not a folder)")
            continue
        found.append((day, child))
    if bad:
        shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise SnapshotError(
            f"{base}: {len(bad)} entr{'y' if len(bad) == 1 else 'ies'} named snapshot=... "
            f"cannot be read as a snapshot: {shown}; name snapshot folders snapshot=YYYY-MM-DD "
            "(e.g. snapshot=2026-01-31) and move anything else out of the graph folder")
    return sorted(found)


def earlier_snapshots(path: str | Path) -> list[Path]:
    """The snapshot folders before the one at ``path`` in its graph folder, oldest first."""
    path = Path(path)
    return [p for _, p in list_snapshots(path.parent.parent, path.parent.name)
            if p.name < path.name]


def snapshot_node_ids(path: str | Path) -> pa.Array:
    """The ``node_id`` column of the snapshot at ``path`` (one Arrow array, in node order),
    read alone."""
    import pyarrow.parquet as pq

    return pq.read_table(Path(path) / NODES, columns=["node_id"]).column(
        "node_id").combine_chunks()


def recent_nodes(path: str | Path, node_ids: pa.Array, window: int) -> np.ndarray | None:
    """bool ``[N]`` over ``node_ids`` (the snapshot at ``path``, in its order): the nodes absent
    from the snapshot ``window`` snapshots before it in the same graph folder, i.e. arrived within
    the last ``window`` snapshots (node ids are stable across snapshots). None when fewer than
    ``window`` earlier snapshots exist. Reads only the earlier snapshot's ``node_id`` column."""
    import pyarrow.compute as pc

    if window < 1:
        raise ValueError(f"window must be at least 1 snapshot, got {window}")
    earlier = earlier_snapshots(path)
    if len(earlier) < window:
        return None
    before = snapshot_node_ids(earlier[-window])
    if before.type != node_ids.type:
        before = before.cast(node_ids.type)
    return ~np.asarray(pc.is_in(node_ids, value_set=before).to_numpy(
        zero_copy_only=False), dtype=bool)


def select_snapshots(root: str | Path, graph: str, date: str | dt.date | None = None,
                     start: str | dt.date | None = None,
                     end: str | dt.date | None = None) -> list[Path]:
    """The latest snapshot (no arguments), the one of ``date``, or every one in ``[start, end]``."""
    snaps = list_snapshots(root, graph)
    if not snaps:
        raise SnapshotError(f"no snapshots for graph {graph!r} under {Path(root) / graph}")
    if date is not None:
        d = parse_date(date)
        hit = [p for day, p in snaps if day == d]
        if not hit:
            have = ", ".join(day.isoformat() for day, _ in snaps[-5:])
            raise SnapshotError(f"no snapshot of {graph!r} dated {d} (latest: {have})")
        return hit
    if start is None and end is None:
        return [snaps[-1][1]]
    lo = parse_date(start) if start is not None else dt.date.min
    hi = parse_date(end) if end is not None else dt.date.max
    return [p for day, p in snaps if lo <= day <= hi]


def backfill_snapshots(root: str | Path, graph: str, start: str | dt.date | None = None,
                       end: str | dt.date | None = None) -> list[Path]:
    """Every snapshot of ``graph`` dated in ``[start, end]`` (either open), oldest first; a
    :class:`SnapshotError` naming the range and the snapshots there are when none is in it."""
    paths = select_snapshots(root, graph, start=start or dt.date.min, end=end or dt.date.max)
    if not paths:
        dates = [day.isoformat() for day, _ in list_snapshots(root, graph)]
        raise SnapshotError(f"no snapshot of {graph!r} between {start or 'the first'} and "
                            f"{end or 'the last'} (there are {len(dates)}, {dates[0]} to "
                            f"{dates[-1]})")
    return paths


def snapshot_date(path: str | Path) -> dt.date:
    name = Path(path).name
    if not name.startswith(PARTITION):
        raise SnapshotError(f"{path} is not a snapshot folder (expected a name like snapshot=2026-01-31)")
    return parse_date(name[len(PARTITION):])


# ---------------------------------------------------------------------------------- writing
def features_array(x: np.ndarray) -> pa.Array:
    """``[N, F]`` floats as a ``list<float32>`` column, without a Python loop over rows."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"features must be 2-D [nodes, features], got shape {x.shape}")
    n, f = x.shape
    offsets = pa.array(np.arange(0, (n + 1) * f, f, dtype=np.int32) if n * f < 2**31
                       else np.arange(0, (n + 1) * f, f, dtype=np.int64))
    values = pa.array(x.reshape(-1))
    if offsets.type == pa.int64():
        return pa.LargeListArray.from_arrays(offsets, values).cast(pa.list_(pa.float32()))
    return pa.ListArray.from_arrays(offsets, values)


def nodes_table(node_id, x: np.ndarray, label=None, extra: dict | None = None,
                feature_names: list[str] | None = None) -> pa.Table:
    """A nodes table in the snapshot format (``label`` entries None for unlabelled nodes)."""
    n = len(node_id)
    cols = {"node_id": pa.array(node_id), "features": features_array(x),
            "label": pa.array(label if label is not None else [None] * n, type=pa.string())}
    for key, values in (extra or {}).items():
        if key in cols:
            raise ValueError(f"extra column {key!r} clashes with a required column")
        cols[key] = pa.array(values)
    table = pa.table(cols)
    if feature_names is not None:
        if len(feature_names) != x.shape[1]:
            raise ValueError(f"{len(feature_names)} feature names for {x.shape[1]} features")
        table = table.replace_schema_metadata({FEATURE_NAMES_KEY: json.dumps(list(feature_names))})
    return table


def edges_table(src, dst, weight=None) -> pa.Table:
    cols = {"src": pa.array(src), "dst": pa.array(dst)}
    if weight is not None:
        cols["weight"] = pa.array(weight, type=pa.float32())
    return pa.table(cols)


def truth_table(node_id, true_label) -> pa.Table:
    return pa.table({"node_id": pa.array(node_id), "true_label": pa.array(true_label, type=pa.string())})


def already_exists(what: str) -> SnapshotError:
    """The refusal to write over existing snapshots, saying how to replace them from the command
    line and from Python (``what``: the snapshot folder, or a list of them)."""
    return SnapshotError(f"{what} already exists: pass --overwrite (overwrite=True in Python) to "
                         "replace it, or another --out or --date")


def write_snapshot(root: str | Path, graph: str, date: str | dt.date, nodes: pa.Table,
                   edges: pa.Table, truth: pa.Table | None = None, overwrite: bool = False) -> Path:
    """Write one snapshot atomically: into a hidden sibling folder, then renamed into place."""
    final = snapshot_dir(root, graph, date)
    if final.exists() and not overwrite:
        raise already_exists(f"snapshot {final}")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".tmp-{final.name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        pq.write_table(nodes, tmp / NODES)
        pq.write_table(edges, tmp / EDGES)
        if truth is not None:
            pq.write_table(truth, tmp / TRUTH)
        publish_folder(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def publish_folder(tmp: Path, final: Path) -> None:
    """Move a finished temporary folder into place (replacing an older version of it)."""
    if final.exists():
        old = final.parent / f".old-{final.name}-{uuid.uuid4().hex[:8]}"
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)


def write_file_atomically(path: str | Path, write) -> Path:
    """Call ``write(tmp)`` to write a hidden temporary file next to ``path``, then rename it onto
    ``path``: readers (and a process that crashes or runs out of disk half-way) see the old file
    or the whole new one, never part of one. The temporary file is removed when ``write`` fails;
    its name is unique, so two processes writing the same ``path`` do not mix their bytes."""
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    return path


# ---------------------------------------------------------------------------------- reading
def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise UnreadableFile(f"{path}: file is missing") from None
    except OSError as err:
        raise UnreadableFile(f"{path}: cannot read ({err.strerror or err})") from None


#: Limits checked on a Parquet footer before its data is parsed (:func:`check_parquet_footer`).
MAX_COLUMNS = 1024          # leaf columns per file (features is one leaf column)
MAX_NESTING = 8             # optional/repeated levels of a column (list<float32> features: 3)
MAX_ROWS_PER_BYTE = 1000    # rows a row group may claim per byte of its column chunks


class _Thrift:
    """A bounded reader of Thrift's compact protocol, enough to walk a Parquet footer
    (``FileMetaData`` in parquet.thrift) without Arrow: every read is checked against the end
    of the buffer and nesting is limited, so a crafted footer is refused, never trusted."""

    STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT, UUID = range(14)
    MAX_DEPTH = 32

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ValueError("the footer ends inside a value")
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise ValueError("a varint longer than 64 bits")

    def skip_bytes(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("a length beyond the end of the footer")
        self.pos += n

    def fields(self):
        """``(field id, type)`` of each field of the struct that starts here, until its stop;
        the caller reads or :meth:`skip` s each value."""
        last = 0
        while True:
            head = self.byte()
            kind = head & 0x0F
            if kind == self.STOP:
                return
            delta = head >> 4
            if delta:
                last += delta
            else:
                raw = self.varint()
                last = (raw >> 1) ^ -(raw & 1)
            yield last, kind

    def elements(self) -> tuple[int, int]:
        """``(count, element type)`` of the list or set that starts here."""
        head = self.byte()
        count = head >> 4
        if count == 15:
            count = self.varint()
        return count, head & 0x0F

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > self.MAX_DEPTH:
            raise ValueError(f"values nested more than {self.MAX_DEPTH} deep")
        if kind in (self.TRUE, self.FALSE):
            return
        if kind == self.BYTE:
            self.skip_bytes(1)
        elif kind in (self.I16, self.I32, self.I64):
            self.varint()
        elif kind == self.DOUBLE:
            self.skip_bytes(8)
        elif kind == self.UUID:
            self.skip_bytes(16)
        elif kind == self.BINARY:
            self.skip_bytes(self.varint())
        elif kind in (self.LIST, self.SET):
            count, element = self.elements()
            if count > len(self.data) - self.pos:  # every element takes a byte at least
                raise ValueError(f"a list of {count} elements in a shorter footer")
            for _ in range(count):
                if element in (self.TRUE, self.FALSE):
                    self.skip_bytes(1)  # in a list a boolean is a byte of its own
                else:
                    self.skip(element, depth + 1)
        elif kind == self.MAP:
            count = self.varint()
            if count:
                types = self.byte()
                if 2 * count > len(self.data) - self.pos:
                    raise ValueError(f"a map of {count} entries in a shorter footer")
                for _ in range(count):
                    for item in (types >> 4, types & 0x0F):
                        if item in (self.TRUE, self.FALSE):
                            self.skip_bytes(1)
                        else:
                            self.skip(item, depth + 1)
        elif kind == self.STRUCT:
            for _, inner in self.fields():
                self.skip(inner, depth + 1)
        else:
            raise ValueError(f"unknown Thrift type {kind}")

    def list_of_structs(self, field: str):
        """Iterate the structs of the list that starts here (each must then be read whole)."""
        count, element = self.elements()
        if element != self.STRUCT:
            raise ValueError(f"{field} is not a list of structs")
        if count > len(self.data) - self.pos:
            raise ValueError(f"{field}: {count} elements in a shorter footer")
        for index in range(count):
            yield index


def parquet_encryption(data: bytes) -> str | None:
    """How a Parquet file is encrypted, read from its own bytes, or None when it is not.

    Arrow must not be asked: a file whose columns are encrypted under a plain-text footer
    (magic ``PAR1``) makes it throw, while reading a column chunk's metadata, an exception that
    nothing catches, and the process aborts (SIGABRT). So the footer's Thrift ``FileMetaData``
    is walked here: ``encryption_algorithm`` (field 8) or ``footer_signing_key_metadata`` (9)
    mark a plain-text footer of an encrypted file, and a ``ColumnChunk`` carrying
    ``crypto_metadata`` (8) or ``encrypted_column_metadata`` (9) an encrypted column; an
    encrypted footer ends with the magic ``PARE``. A footer that cannot be walked is a
    :class:`ValueError` (Arrow is not trusted with it either)."""
    if len(data) < 12:
        return None  # too short for a footer: Arrow says so cleanly
    if data[-4:] == b"PARE":
        return "its footer is encrypted (magic PARE)"
    if data[-4:] != b"PAR1":
        return None
    size = int.from_bytes(data[-8:-4], "little")
    if size > len(data) - 12:
        return None  # Arrow refuses a footer longer than the file cleanly
    t = _Thrift(data[len(data) - 8 - size:len(data) - 8])
    for fid, kind in t.fields():  # FileMetaData
        if fid in (8, 9):
            return "its columns are encrypted (the footer names an encryption algorithm)"
        if fid == 4 and kind == t.LIST:  # row_groups: list<RowGroup>
            for group in t.list_of_structs("row_groups"):
                for gid, gkind in t.fields():  # RowGroup
                    if gid == 1 and gkind == t.LIST:  # columns: list<ColumnChunk>
                        for column in t.list_of_structs("columns"):
                            for cid, ckind in t.fields():  # ColumnChunk
                                if cid in (8, 9):
                                    return (f"column chunk {column} of row group {group} is "
                                            "encrypted")
                                t.skip(ckind)
                    else:
                        t.skip(gkind)
        else:
            t.skip(kind)
    return None


def check_parquet_footer(path: Path, data: bytes) -> None:
    """Refuse a Parquet file whose footer is implausible, before anything is allocated from it.

    Arrow sizes its buffers from the footer: a row group that claims 100 million rows in a few
    kilobytes makes it reserve gigabytes before it finds out. Checked here, on the footer alone
    (a few kilobytes): at most :data:`MAX_COLUMNS` leaf columns, each at most
    :data:`MAX_NESTING` levels deep, no column name twice, and every row group's row count at
    most :data:`MAX_ROWS_PER_BYTE` times the bytes of its column chunks (real snapshot data
    needs at least a byte per row or so; only a lie comes near the bound). Before Arrow sees
    the footer, an encrypted file is refused (:func:`parquet_encryption`): reading the column
    metadata of one would abort the process."""
    try:
        encrypted = parquet_encryption(data)
    except ValueError as err:
        raise UnreadableFile(f"{path}: not a readable Parquet file (its footer cannot be "
                             f"parsed: {err})") from None
    if encrypted:
        raise UnreadableFile(f"{path}: an encrypted Parquet file ({encrypted}); snapshot files "
                             "must be written without Parquet encryption") from None
    try:
        meta = pq.read_metadata(pa.BufferReader(data))
    except (pa.ArrowException, OSError, ValueError) as err:
        raise UnreadableFile(f"{path}: not a readable Parquet file ({err})") from None
    if meta.num_columns > MAX_COLUMNS:
        raise UnreadableFile(f"{path}: rule parquet_footer: {meta.num_columns} columns, more than "
                            f"the {MAX_COLUMNS} a snapshot file may have")
    schema = meta.schema
    for i in range(meta.num_columns):
        depth = schema.column(i).max_definition_level  # one per optional or repeated level
        if depth > MAX_NESTING:
            raise UnreadableFile(f"{path}: rule parquet_footer: column {schema.column(i).path!r} "
                                f"is nested {depth} levels deep (at most {MAX_NESTING})")
    try:
        names = schema.to_arrow_schema().names
    except (pa.ArrowException, ValueError) as err:
        raise UnreadableFile(f"{path}: not a readable Parquet file ({err})") from None
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UnreadableFile(f"{path}: rule column_names_unique: column name(s) "
                            f"{', '.join(map(repr, repeated))} occur more than once")
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        size = sum(max(0, group.column(c).total_compressed_size) for c in range(group.num_columns))
        if group.num_rows < 0 or group.num_rows > MAX_ROWS_PER_BYTE * max(size, 1):
            raise UnreadableFile(
                f"{path}: rule parquet_footer: row group {g} claims {group.num_rows} rows in "
                f"{size} bytes of data; the footer is not trusted to size buffers")


def parse_parquet(path: Path, data: bytes) -> pa.Table:
    """Parse Parquet bytes; a truncated or non-Parquet file, or one whose footer is implausible
    (:func:`check_parquet_footer`), is an :class:`UnreadableFile`."""
    check_parquet_footer(path, data)
    try:
        return pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError, ValueError) as err:
        raise UnreadableFile(f"{path}: not a readable Parquet file ({err})") from None


@dataclass
class SnapshotFiles:
    """The raw tables of one snapshot, parsed from the bytes that ``content_hash`` names."""

    path: Path
    date: dt.date
    nodes: pa.Table
    edges: pa.Table
    truth: pa.Table | None
    content_hash: str
    sizes: dict = field(default_factory=dict)


#: How often :func:`read_snapshot_files` reads a snapshot that changes under it before giving up.
READ_ATTEMPTS = 3


def _identity(path: Path) -> tuple:
    """What identifies the version of a snapshot folder on disk: the folder's inode and each
    file's inode, size and modification time (a folder replaced by a rename, or a file
    rewritten, changes it)."""
    try:
        st = path.stat()
    except OSError:
        return ("missing",)
    out: list = [(st.st_dev, st.st_ino)]
    for name in (NODES, EDGES, TRUTH):
        try:
            f = (path / name).stat()
            out.append((name, f.st_ino, f.st_size, f.st_mtime_ns))
        except OSError:
            out.append((name, None))
    return tuple(out)


def read_snapshot_files(path: str | Path) -> SnapshotFiles:
    """Read ``nodes``, ``edges`` and (if present) ``truth`` of one snapshot folder, each file's
    bytes exactly once; ``content_hash`` is the SHA-256 over the three files' bytes.

    The three files are one version of the snapshot: the folder and its files are identified
    (inode, size, modification time) before and after the bytes are read, and a snapshot that
    changed in between (a writer replaced the folder or rewrote a file) is read again, up to
    :data:`READ_ATTEMPTS` times, then refused with a :class:`SnapshotError`. Without this, a
    reader racing a writer could hash and parse the old nodes with the new edges."""
    path = Path(path)
    if not path.is_dir():
        raise SnapshotError(f"{path}: snapshot folder does not exist")
    for _ in range(READ_ATTEMPTS):
        before = _identity(path)
        raw: dict[str, bytes | None] = {}
        for name in (NODES, EDGES, TRUTH):
            file = path / name
            raw[name] = None if name == TRUTH and not file.exists() else read_bytes(file)
        if _identity(path) == before:
            break
    else:
        raise SnapshotError(
            f"{path}: the snapshot changed while it was being read ({READ_ATTEMPTS} attempts); "
            "write snapshots with data_contracts.snapshots.write_snapshot (a hidden folder "
            "renamed into place) and never rewrite a published one in place")
    digest = hashlib.sha256()
    tables, sizes = {}, {}
    for name in (NODES, EDGES, TRUTH):
        data = raw[name]
        if data is None:
            tables[name] = None
            continue
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "little"))
        digest.update(data)
        sizes[name] = len(data)
        tables[name] = parse_parquet(path / name, data)
    try:
        date = snapshot_date(path)
    except SnapshotError:
        date = None
    return SnapshotFiles(path, date, tables[NODES], tables[EDGES], tables[TRUTH],
                         digest.hexdigest(), sizes)


@dataclass
class Snapshot:
    """One snapshot as arrays indexed ``0..N-1`` in the order of ``nodes.parquet``.

    ``labels``: known-class index per node (-1 unlabelled) into ``class_names`` (sorted label
    strings); ``truth`` likewise into ``truth_names`` when ``truth.parquet`` exists (-1 where a
    node has no truth row). ``extra``: the carried-through node columns.
    """

    path: Path
    date: dt.date | None
    content_hash: str
    node_ids: pa.Array
    x: np.ndarray
    edge_index: np.ndarray
    edge_weight: np.ndarray | None
    labels: np.ndarray
    class_names: list[str]
    extra: pa.Table
    feature_names: list[str] | None = None
    truth: np.ndarray | None = None
    truth_names: list[str] | None = None

    @property
    def num_nodes(self) -> int:
        return len(self.node_ids)


def feature_matrix(column: pa.ChunkedArray | pa.Array, where: str = NODES) -> np.ndarray:
    """A ``list<number>`` column of one fixed length as an ``[N, F]`` float32 array
    (:func:`oral_core.columns.feature_matrix`, raising :class:`SnapshotError`)."""
    return _feature_matrix(column, where, SnapshotError)


def encode_labels(values: pa.Array) -> tuple[np.ndarray, list[str]]:
    """String labels (null: none) to indices into their sorted distinct values."""
    names = sorted(v for v in pc.unique(values).to_pylist() if v is not None)
    index = index_of(values, pa.array(names, type=values.type))
    index[np.asarray(values.is_null().to_numpy(zero_copy_only=False))] = -1
    return index, names


def load_snapshot(path: str | Path) -> Snapshot:
    """Read a snapshot folder into arrays (see :class:`Snapshot`). Checks only what it needs to
    build the arrays; run ``data_contracts.validate_snapshot`` first for the full contract."""
    files = read_snapshot_files(path)
    return snapshot_from_files(files)


def snapshot_from_files(files: SnapshotFiles) -> Snapshot:
    nodes, edges = files.nodes, files.edges
    where_n, where_e = str(files.path / NODES), str(files.path / EDGES)
    for col in ("node_id", "features", "label"):
        if col not in nodes.column_names:
            raise SnapshotError(f"{where_n}: rule required_columns: column {col!r} is missing")
    for col in ("src", "dst"):
        if col not in edges.column_names:
            raise SnapshotError(f"{where_e}: rule required_columns: column {col!r} is missing")
    node_ids = nodes.column("node_id").combine_chunks()
    if node_ids.null_count:
        raise SnapshotError(f"{where_n}: rule node_id_not_null: {node_ids.null_count} null ids")
    if len(pc.unique(node_ids)) != len(node_ids):
        raise SnapshotError(f"{where_n}: rule node_id_unique: node ids repeat")
    x = feature_matrix(nodes.column("features"), where_n)
    src = index_of(edges.column("src").combine_chunks(), node_ids)
    dst = index_of(edges.column("dst").combine_chunks(), node_ids)
    unknown = (src < 0) | (dst < 0)
    if unknown.any():
        rows = np.flatnonzero(unknown)[:5].tolist()
        raise SnapshotError(f"{where_e}: rule edge_endpoints_known: {int(unknown.sum())} edges "
                            f"name unknown nodes (rows {rows})")
    weight = None
    if "weight" in edges.column_names:
        weight = edges.column("weight").to_numpy().astype(np.float32)
    label_col = nodes.column("label").combine_chunks()
    if not (pa.types.is_string(label_col.type) or pa.types.is_large_string(label_col.type)
            or pa.types.is_null(label_col.type)):
        label_col = label_col.cast(pa.string())
    labels, names = encode_labels(label_col.cast(pa.string()))
    feature_names = None
    meta = nodes.schema.metadata or {}
    if FEATURE_NAMES_KEY in meta:
        try:
            parsed = json.loads(meta[FEATURE_NAMES_KEY])
            if isinstance(parsed, list) and len(parsed) == x.shape[1]:
                feature_names = [str(v) for v in parsed]
        except (ValueError, TypeError):
            feature_names = None
    truth = truth_names = None
    if files.truth is not None:
        t = files.truth
        pos = index_of(t.column("node_id").combine_chunks(), node_ids)
        codes, truth_names = encode_labels(t.column("true_label").combine_chunks().cast(pa.string()))
        truth = np.full(len(node_ids), -1, dtype=np.int64)
        ok = pos >= 0
        truth[pos[ok]] = codes[ok]
    extra = nodes.drop_columns(["node_id", "features", "label"])
    return Snapshot(files.path, files.date, files.content_hash, node_ids, x,
                    np.stack([src, dst]).astype(np.int64), weight, labels.astype(np.int64), names,
                    extra, feature_names, truth, truth_names)


def table_bytes(table: pa.Table) -> bytes:
    """A table as Parquet bytes (tests and small tools)."""
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()
