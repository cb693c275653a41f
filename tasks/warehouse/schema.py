"""The warehouse schema: DDL of the tables and views, the migrations from older schema versions,
and the column lists and Arrow schemas that publishing fills.

Tables (``meta`` holds ``schema_version``)::

    snapshots        graph, snapshot_date, content_hash (PK together), path, nodes, edges,
                     labelled_nodes, known_classes, validation_passed, validated_at
    runs             run_id (PK), graph, snapshot_date, content_hash, config_hash, code_version,
                     prefect_flow_run_id, mlflow_run_id, model_name, model_version, device,
                     epochs, val_accuracy, num_classes, num_known, num_novel, num_nodes,
                     train_seconds, published_at, acc_all, acc_known, acc_novel,
                     scores MAP(VARCHAR, DOUBLE)
    classes          run_id, class_key (PK together), lineage_id, class_name, is_novel, size,
                     mean_confidence,
                     top_features STRUCT(name VARCHAR, lift DOUBLE, class_mean DOUBLE)[],
                     exemplars VARCHAR[] (node ids), purity, majority_true_label
    node_assignments run_id, node_id, class_key, lineage_id, class_name, is_novel, confidence
                     (unique per run_id and node_id; enforced by publish_run, not by an index,
                     which would cost memory on hundreds of millions of rows)
    class_lineage    graph, lineage_id, run_id (PK: run_id, lineage_id), snapshot_date,
                     class_key, status, size, previous_size, parents VARCHAR[], merged_into,
                     first_seen, last_seen
    class_labels     graph, lineage_id, name, labelled_by, labelled_at: the names people gave
                     classes (:meth:`Warehouse.label_class`); every label is kept, the latest
                     of a (graph, lineage id) counts

``lineage_id`` is the one key of a class across tables and nights (``known:<name>`` or
``<graph>:novel:<n>``); ``class_key`` is the model's class number within one run (join on
``(run_id, class_key)``).

Views: ``latest_runs`` (each graph's latest run that the champion gate did not find degraded,
``gate_status``: latest snapshot date, then latest published),
``latest_labels`` (the current label of each graph's lineage id), ``latest_classes`` (the
classes of each graph's latest run with their lineage status and ``label``),
``emerged_classes`` (what is new tonight: those of them that are novel and ``emerged``, i.e.
confirmed on their second night; without confirmation, novel ones whose lineage id was first
seen on that run's snapshot date, whatever their status, ``emerged``, ``merged`` or
``split``), ``candidate_classes`` (novel classes on their first night, not yet confirmed),
``class_timeline`` (one row per
graph, lineage id and snapshot date: size, status and ``label``; when several configurations
ran on one date, the latest published run of that date counts).

Schema version 1 kept ``scores``, ``top_features``, ``exemplars`` and ``parents`` as JSON
text; :meth:`Warehouse.ensure_schema` (run by every publish, label and analyst query) converts
such a warehouse in place, in one transaction (:data:`MIGRATIONS`).
"""
from __future__ import annotations

import pyarrow as pa

from .lineage import STATUSES

SCHEMA_VERSION = 5

_STATUS_LIST = ", ".join(f"'{s}'" for s in STATUSES)  # constants of this module, not user values

#: the ``class_lineage`` table's columns and rules (its ``status`` takes :data:`STATUSES`)
_LINEAGE_COLUMNS = f"""(
        graph VARCHAR NOT NULL,
        lineage_id VARCHAR NOT NULL,
        run_id VARCHAR NOT NULL,
        snapshot_date DATE NOT NULL,
        class_key INTEGER,
        status VARCHAR NOT NULL CHECK (status IN ({_STATUS_LIST})),
        size BIGINT NOT NULL,
        previous_size BIGINT,
        parents VARCHAR[] NOT NULL,
        merged_into VARCHAR,
        first_seen DATE,
        last_seen DATE,
        PRIMARY KEY (run_id, lineage_id))"""
LINEAGE_TABLE = f"CREATE TABLE IF NOT EXISTS class_lineage {_LINEAGE_COLUMNS}"

TABLES = [
    """CREATE TABLE IF NOT EXISTS meta (
        key VARCHAR PRIMARY KEY,
        value VARCHAR NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS snapshots (
        graph VARCHAR NOT NULL,
        snapshot_date DATE NOT NULL,
        content_hash VARCHAR NOT NULL,
        path VARCHAR,
        nodes BIGINT,
        edges BIGINT,
        labelled_nodes BIGINT,
        known_classes INTEGER,
        validation_passed BOOLEAN,
        validated_at TIMESTAMP,
        PRIMARY KEY (graph, snapshot_date, content_hash))""",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id VARCHAR PRIMARY KEY,
        graph VARCHAR NOT NULL,
        snapshot_date DATE NOT NULL,
        content_hash VARCHAR NOT NULL,
        config_hash VARCHAR NOT NULL,
        code_version VARCHAR,
        prefect_flow_run_id VARCHAR,
        mlflow_run_id VARCHAR,
        model_name VARCHAR,
        model_version VARCHAR,
        device VARCHAR,
        epochs INTEGER,
        val_accuracy DOUBLE,
        num_classes INTEGER,
        num_known INTEGER,
        num_novel INTEGER,
        num_nodes BIGINT,
        train_seconds DOUBLE,
        published_at TIMESTAMP NOT NULL,
        acc_all DOUBLE,
        acc_known DOUBLE,
        acc_novel DOUBLE,
        scores MAP(VARCHAR, DOUBLE),
        start_mode VARCHAR,
        start_reason VARCHAR,
        warm_from_run_id VARCHAR,
        warm_from_version VARCHAR,
        gate_status VARCHAR,
        gate_reason VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS classes (
        run_id VARCHAR NOT NULL,
        class_key INTEGER NOT NULL,
        lineage_id VARCHAR NOT NULL,
        class_name VARCHAR,
        is_novel BOOLEAN NOT NULL,
        size BIGINT NOT NULL,
        mean_confidence DOUBLE,
        top_features STRUCT(name VARCHAR, lift DOUBLE, class_mean DOUBLE)[],
        exemplars VARCHAR[],
        purity DOUBLE,
        majority_true_label VARCHAR,
        PRIMARY KEY (run_id, class_key))""",
    """CREATE TABLE IF NOT EXISTS node_assignments (
        run_id VARCHAR NOT NULL,
        node_id VARCHAR NOT NULL,
        class_key INTEGER,
        lineage_id VARCHAR,
        class_name VARCHAR,
        is_novel BOOLEAN NOT NULL,
        confidence DOUBLE)""",
    LINEAGE_TABLE,
    """CREATE TABLE IF NOT EXISTS class_labels (
        graph VARCHAR NOT NULL,
        lineage_id VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        labelled_by VARCHAR NOT NULL,
        labelled_at TIMESTAMP NOT NULL)""",
]

#: In-place conversions from an older schema version (the key) to the next, run in the schema
#: transaction of :meth:`Warehouse.ensure_schema` (all or nothing). 1 -> 2: the JSON text
#: columns become typed (a ``top_features`` entry's ``feature`` key, as version 1 wrote it,
#: becomes ``name``; a score that is not a number becomes NULL: the ``acc_*`` columns keep
#: the accuracies).
MIGRATIONS = {
    1: [
        """ALTER TABLE runs ALTER scores TYPE MAP(VARCHAR, DOUBLE)
            USING TRY_CAST(CAST(scores AS JSON) AS MAP(VARCHAR, DOUBLE))""",
        """ALTER TABLE classes ALTER top_features
            TYPE STRUCT(name VARCHAR, lift DOUBLE, class_mean DOUBLE)[]
            USING list_transform(CAST(top_features AS JSON[]), lambda f: struct_pack(
                name := coalesce(f ->> 'name', f ->> 'feature'),
                lift := TRY_CAST(f ->> 'lift' AS DOUBLE),
                class_mean := TRY_CAST(f ->> 'class_mean' AS DOUBLE)))""",
        """ALTER TABLE classes ALTER exemplars TYPE VARCHAR[]
            USING CAST(CAST(exemplars AS JSON) AS VARCHAR[])""",
        """ALTER TABLE class_lineage ALTER parents TYPE VARCHAR[]
            USING CAST(CAST(parents AS JSON) AS VARCHAR[])""",
    ],
    # 2 -> 3: how each run's training started (warm starts, issue 18.1); NULL for older runs
    2: [
        "ALTER TABLE runs ADD COLUMN start_mode VARCHAR",
        "ALTER TABLE runs ADD COLUMN start_reason VARCHAR",
        "ALTER TABLE runs ADD COLUMN warm_from_run_id VARCHAR",
        "ALTER TABLE runs ADD COLUMN warm_from_version VARCHAR",
    ],
    # 3 -> 4: the champion gate's verdict before publishing (issue 47): a ``degraded`` run is
    # kept for the record but is never the latest answer; NULL (older runs) counts as ``ok``
    3: [
        "ALTER TABLE runs ADD COLUMN gate_status VARCHAR",
        "ALTER TABLE runs ADD COLUMN gate_reason VARCHAR",
    ],
    # 4 -> 5: the lineage statuses ``candidate`` and ``dismissed`` (a novel class confirmed on
    # its second night, issue 47): the table is rebuilt with the wider status rule, rows kept
    4: [
        f"CREATE TABLE class_lineage_v5 {_LINEAGE_COLUMNS}",
        "INSERT INTO class_lineage_v5 SELECT * FROM class_lineage",
        "DROP TABLE class_lineage",
        "ALTER TABLE class_lineage_v5 RENAME TO class_lineage",
    ],
}

#: a run the champion gate found degraded (``runs.gate_status``): left out of every "latest"
#: view and of the previous run lineage continues from
ANSWER_RUN = "gate_status IS DISTINCT FROM 'degraded'"

#: Re-created (CREATE OR REPLACE) by every :meth:`Warehouse.ensure_schema`, i.e. every publish and
#: label: changing a view alone needs no new schema version (an existing warehouse gets the new
#: definition with its next night; a migration brings it along too).
VIEWS = [
    f"""CREATE OR REPLACE VIEW latest_runs AS
        SELECT * FROM runs WHERE {ANSWER_RUN}
        QUALIFY row_number() OVER (PARTITION BY graph
                                   ORDER BY snapshot_date DESC, published_at DESC, run_id DESC) = 1""",
    """CREATE OR REPLACE VIEW latest_labels AS
        SELECT graph, lineage_id, name AS label, labelled_by, labelled_at FROM class_labels
        QUALIFY row_number() OVER (PARTITION BY graph, lineage_id
                                   ORDER BY labelled_at DESC, rowid DESC) = 1""",
    """CREATE OR REPLACE VIEW latest_classes AS
        SELECT r.graph, r.snapshot_date, r.run_id, c.lineage_id, lb.label, c.class_key,
               c.class_name, c.is_novel, c.size, c.mean_confidence, l.status, l.previous_size,
               l.parents, l.first_seen, l.last_seen, c.top_features, c.exemplars, c.purity,
               c.majority_true_label
        FROM latest_runs r
        JOIN classes c ON c.run_id = r.run_id
        LEFT JOIN class_lineage l ON l.run_id = c.run_id AND l.lineage_id = c.lineage_id
        LEFT JOIN latest_labels lb ON lb.graph = r.graph AND lb.lineage_id = c.lineage_id""",
    # "what is new tonight" (tasks.warehouse.lineage.new_tonight): a novel class confirmed on
    # the latest run (``emerged``, its second night); without confirmation (older runs, or
    # LineageConfig.confirm_novel off) a novel id first seen that night, whatever its status
    # word (a new class formed from parts of others is ``merged`` or ``split``)
    """CREATE OR REPLACE VIEW emerged_classes AS
        SELECT * FROM latest_classes
        WHERE is_novel AND (status = 'emerged'
                            OR (status IN ('merged', 'split') AND first_seen = snapshot_date))""",
    # novel classes on their first night, not yet published as classes (confirmation)
    """CREATE OR REPLACE VIEW candidate_classes AS
        SELECT * FROM latest_classes WHERE is_novel AND status = 'candidate'""",
    f"""CREATE OR REPLACE VIEW class_timeline AS
        WITH day_runs AS (
            SELECT run_id FROM runs WHERE {ANSWER_RUN}
            QUALIFY row_number() OVER (PARTITION BY graph, snapshot_date
                                       ORDER BY published_at DESC, run_id DESC) = 1)
        SELECT l.graph, l.lineage_id, lb.label, l.snapshot_date, l.status, l.size,
               l.previous_size, l.class_key, c.class_name, c.is_novel, c.mean_confidence,
               l.parents, l.merged_into, l.first_seen, l.last_seen, l.run_id
        FROM class_lineage l
        JOIN day_runs d ON d.run_id = l.run_id
        LEFT JOIN classes c ON c.run_id = l.run_id AND c.class_key = l.class_key
        LEFT JOIN latest_labels lb ON lb.graph = l.graph AND lb.lineage_id = l.lineage_id""",
]

RUN_COLUMNS = ["run_id", "graph", "snapshot_date", "content_hash", "config_hash", "code_version",
               "prefect_flow_run_id", "mlflow_run_id", "model_name", "model_version", "device",
               "epochs", "val_accuracy", "num_classes", "num_known", "num_novel", "num_nodes",
               "train_seconds", "published_at", "acc_all", "acc_known", "acc_novel", "scores",
               "start_mode", "start_reason", "warm_from_run_id", "warm_from_version",
               "gate_status", "gate_reason"]
SNAPSHOT_COLUMNS = ["graph", "snapshot_date", "content_hash", "path", "nodes", "edges",
                    "labelled_nodes", "known_classes", "validation_passed", "validated_at"]
TOP_FEATURE = pa.struct([("name", pa.string()), ("lift", pa.float64()),
                         ("class_mean", pa.float64())])
CLASS_SCHEMA = pa.schema([
    ("class_key", pa.int32()), ("lineage_id", pa.string()), ("class_name", pa.string()),
    ("is_novel", pa.bool_()), ("size", pa.int64()), ("mean_confidence", pa.float64()),
    ("top_features", pa.list_(TOP_FEATURE)), ("exemplars", pa.list_(pa.string())),
    ("purity", pa.float64()), ("majority_true_label", pa.string())])
ASSIGNMENT_COLUMNS = {"node_id", "class_key", "is_novel", "confidence"}
LINEAGE_SCHEMA = pa.schema([
    ("lineage_id", pa.string()), ("class_key", pa.int32()), ("status", pa.string()),
    ("size", pa.int64()), ("previous_size", pa.int64()), ("parents", pa.list_(pa.string())),
    ("merged_into", pa.string()), ("first_seen", pa.date32()), ("last_seen", pa.date32())])
