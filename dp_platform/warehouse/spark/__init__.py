"""The Apache Spark warehouse engine: the DuckDB warehouse's SQL ported to Spark SQL (``*.sql``
here, each beside its DuckDB twin's name), Delta Lake tables partitioned by (campaign, day),
record tables whose commits span tables (records.py), and a session that keeps private counts out of
Spark's UI, event log and listeners. Importing this package does not import PySpark."""
