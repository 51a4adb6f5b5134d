"""Directory operations on the tables' file system (local, HDFS, S3…) through Hadoop's
FileSystem API in the session's JVM — the same file system Spark writes, whatever its scheme."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["TableFiles"]


class TableFiles:
    """Delete, move and list directories under the tables' root."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str):  # a py4j org.apache.hadoop.fs.Path
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def _fs(self, path):
        return path.getFileSystem(self._conf)

    def exists(self, path: str) -> bool:
        hadoop = self._path(path)
        return bool(self._fs(hadoop).exists(hadoop))

    def delete(self, path: str) -> None:
        """Remove a directory tree (nothing if absent)."""
        hadoop = self._path(path)
        self._fs(hadoop).delete(hadoop, True)

    def move(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target`` (a missing parent of ``target`` is created)."""
        src, dst = self._path(source), self._path(target)
        fs = self._fs(src)
        fs.mkdirs(dst.getParent())
        if not fs.rename(src, dst):
            raise OSError(f"could not move {source} to {target}")

    def glob(self, pattern: str) -> list[str]:
        """Paths matching a Hadoop glob (``*`` within one level)."""
        hadoop = self._path(pattern)
        found = self._fs(hadoop).globStatus(hadoop)
        return [] if found is None else [str(status.getPath().toString()) for status in found]
