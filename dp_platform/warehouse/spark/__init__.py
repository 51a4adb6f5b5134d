"""The Apache Spark warehouse engine: the DuckDB warehouse's SQL ported to Spark SQL (``*.sql``
here, each beside its DuckDB twin's name), Parquet tables partitioned by (campaign, day), a
small SQLite catalog as the commit record, and a session that keeps private counts out of
Spark's UI, event log and listeners. Importing this package does not import PySpark."""
