"""Infrastructure settings of a catalogue: where the warehouse and the ledger run.

The catalogue's ``warehouse:`` and ``ledger:`` blocks (docs/operators.md, "Spark" and "A ledger
on PostgreSQL"): they say where the platform keeps its data, not what a campaign releases, so
the warehouse and the ledger read them without depending on the campaign models (config.py).
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "SPARK_PRIVATE_PREFIXES",
    "SPARK_SESSION_PREFIXES",
    "LedgerConfig",
    "SparkSettings",
    "Strict",
    "WarehouseConfig",
]


class Strict(BaseModel):
    """The rule of every catalogue block, here and in config.py: an unknown key is refused (a
    misspelt key never falls back to a default silently), a loaded block never changes, and
    ``.inf`` / ``.nan`` are refused in every float field at load."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# Spark settings the platform's session fixes: each shows per-operator row counts (private
# values) in a UI, an event log, a listener or a metrics sink (dp_platform/warehouse/spark/
# session.py sets them; a catalogue may not change them).
SPARK_PRIVATE_PREFIXES = (
    "spark.ui.",
    "spark.eventLog.",
    "spark.history.",
    "spark.sql.ui.",
    "spark.sql.streaming.ui.",
    "spark.metrics.",
    "spark.extraListeners",
    "spark.sql.queryExecutionListeners",
    "spark.sql.sources.partitionOverwriteMode",
    "spark.sql.session.timeZone",
    "spark.sql.hive.manageFilesourcePartitions",
    "spark.sql.extensions",
    "spark.sql.catalog.spark_catalog",
    "spark.sql.legacy.parameterSubstitution.constantsOnly",
)


# Settings a Spark Connect client may set on its session (SQL and Delta Lake ones; Spark refuses
# the few static spark.sql.* keys at session start). Anything else is applied at a JVM's start:
# with ``remote`` it belongs to the server's (dp-platform spark-connect-server --conf).
SPARK_SESSION_PREFIXES = ("spark.sql.", "spark.databricks.delta.")


class SparkSettings(Strict):
    """Where and how the Spark engine runs (docs/operators.md, "Spark")."""

    master: str = Field(default="local[2]", description="Spark master URL")
    path: str | None = Field(
        default=None, description="root of the Delta tables (default <home>/spark/tables)"
    )
    jars: str | None = Field(
        default=None,
        description="directory of the Delta Lake and hadoop-aws jars (default: the spark-jars "
        "folder of the platform's virtual environment, filled by make .venv/.spark)",
    )
    conf: dict[str, str] = Field(default_factory=dict, description="extra Spark settings")
    remote: str | None = Field(
        default=None,
        description="sc://host:port of a Spark Connect server started with `dp-platform "
        "spark-connect-server` (no JVM in the platform's processes)",
    )

    @field_validator("conf")
    @classmethod
    def _private(cls, conf: dict[str, str]) -> dict[str, str]:
        for key in conf:
            if key.startswith(SPARK_PRIVATE_PREFIXES):
                raise ValueError(
                    f"{key} is fixed by the platform (a UI, event log, listener or metrics "
                    "sink would expose per-operator row counts; time zone, partition "
                    "overwrite and the Delta Lake catalog are part of the storage format)"
                )
        return conf

    @field_validator("remote")
    @classmethod
    def _connect_url(cls, remote: str | None) -> str | None:
        if remote is None:
            return remote
        parts = urlsplit(remote)
        if parts.scheme != "sc" or not parts.hostname:
            raise ValueError("must be a Spark Connect URL, sc://host:port")
        if "token=" in remote:
            raise ValueError(
                "a token in the URL is refused (the home records the URL and errors show it); "
                "set SPARK_CONNECT_AUTHENTICATE_TOKEN"
            )
        return remote

    @model_validator(mode="after")
    def _remote_alone(self) -> SparkSettings:
        """With ``remote`` the server's start fixed its master, jars and JVM: the catalogue may
        add only session settings, which the client sets (SPARK_SESSION_PREFIXES)."""
        if self.remote is None:
            return self
        if "master" in self.model_fields_set:
            raise ValueError("remote and master exclude each other (the server has its master)")
        if self.jars is not None:
            raise ValueError("remote and jars exclude each other (the server loads the jars)")
        for key in self.conf:
            if not key.startswith(SPARK_SESSION_PREFIXES):
                raise ValueError(
                    f"{key} with remote: a Connect client sets session settings only "
                    "(spark.sql.*, spark.databricks.delta.*); give it to the server's start "
                    "(dp-platform spark-connect-server --conf)"
                )
        return self


class WarehouseConfig(Strict):
    """The warehouse engine: embedded DuckDB (default, the reference) or Apache Spark."""

    engine: Literal["duckdb", "spark"] = "duckdb"
    spark: SparkSettings = SparkSettings()


class LedgerConfig(Strict):
    """Where the privacy ledger lives: the home's SQLite file (no ``url``, the default) or a
    PostgreSQL database (docs/operators.md, "A ledger on PostgreSQL")."""

    url: str | None = Field(default=None, description="postgresql://user@host:port/database")

    @field_validator("url")
    @classmethod
    def _postgres_without_password(cls, url: str | None) -> str | None:
        if url is None:
            return url
        parts = urlsplit(url)
        if parts.scheme not in ("postgresql", "postgres"):
            raise ValueError(
                "must be a postgresql:// URL (leave `ledger:` out for the home's SQLite file)"
            )
        if parts.password is not None or "password=" in parts.query:
            raise ValueError(
                "a password in the URL is refused (the home records the URL and errors show "
                "it); set PGPASSWORD or use ~/.pgpass"
            )
        if not parts.path.strip("/"):
            raise ValueError("must name a database (postgresql://user@host:port/database)")
        return url
