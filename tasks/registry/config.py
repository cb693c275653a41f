"""Where MLflow lives and what a graph's things are called in it.

:class:`TrackingConfig`: the tracking and registry URIs (by default an embedded SQLite store
``sqlite:///<state_dir>/mlflow.db`` with artifacts under ``<state_dir>/mlartifacts``; an
``http(s)://`` URI, an ``mlflow server``, works the same way), the artifact root and the retry
budget. :func:`safe_uri` masks a password. Names: experiment and registered model
``oral-<graph>`` (:func:`experiment_name`, :func:`model_name`), the champion ``models:/oral-<graph>@champion``
(:func:`champion_uri`).
"""
from __future__ import annotations

import dataclasses
import urllib.parse
from pathlib import Path

CHAMPION = "champion"


@dataclasses.dataclass
class TrackingConfig:
    """Where MLflow lives.

    ``tracking_uri``: ``None`` for the embedded SQLite store ``sqlite:///<state_dir>/mlflow.db``;
    any MLflow URI otherwise (``http://127.0.0.1:5000`` for an ``mlflow server``).
    ``registry_uri``: defaults to the tracking URI.
    ``artifact_root``: where new experiments keep their artifacts (``<artifact_root>/oral-<graph>``).
    Default ``<state_dir>/mlartifacts`` for a local store; for an ``http(s)`` server the server's
    own artifact destination (a client-side path would only work on the server's host).
    ``attempts``/``base_delay``/``max_delay``: the retry budget of every MLflow call
    (:func:`with_retries`).
    """

    tracking_uri: str | None
    state_dir: Path
    registry_uri: str | None = None
    artifact_root: Path | str | None = None
    attempts: int = 3
    base_delay: float = 1.0
    max_delay: float = 15.0

    def __post_init__(self):
        self.state_dir = Path(self.state_dir).expanduser().absolute()
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")

    @property
    def uri(self) -> str:
        """The tracking URI in effect."""
        if self.tracking_uri:
            return str(self.tracking_uri)
        # percent-encoded: SQLAlchemy reads '?' as the start of a query and decodes '%xx', so a
        # state folder named with them would put the store somewhere else
        return f"sqlite:///{urllib.parse.quote((self.state_dir / 'mlflow.db').as_posix())}"

    @property
    def registry(self) -> str:
        return str(self.registry_uri) if self.registry_uri else self.uri

    @property
    def is_remote(self) -> bool:
        return urllib.parse.urlparse(self.uri).scheme in ("http", "https")

    @property
    def artifact_base(self) -> Path | None:
        """The folder new experiments' artifacts go under (``None``: the server decides)."""
        if self.artifact_root is not None:
            return Path(self.artifact_root).expanduser().absolute()
        return None if self.is_remote else self.state_dir / "mlartifacts"

    def safe_uri(self) -> str:
        return safe_uri(self.uri)


def safe_uri(uri: str) -> str:
    """``uri`` without a password, for messages and logs."""
    parts = urllib.parse.urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else "***@"
    return urllib.parse.urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


def model_name(graph: str) -> str:
    """The registered model of ``graph``: ``oral-<graph>``."""
    return f"oral-{_check_graph(graph)}"


def experiment_name(graph: str) -> str:
    return f"oral-{_check_graph(graph)}"


def champion_uri(graph: str) -> str:
    """``models:/oral-<graph>@champion`` (load it with :func:`load_champion`)."""
    return f"models:/{model_name(graph)}@{CHAMPION}"


def _check_graph(graph: str) -> str:
    from data_contracts.snapshots import check_graph_name
    return check_graph_name(graph)
