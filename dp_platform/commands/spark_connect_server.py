"""``dp-platform spark-connect-server --port N``: a private Spark Connect server, in the foreground.

The platform's processes then start no JVM: a catalogue with ``warehouse: {engine: spark,
spark: {remote: "sc://HOST:N"}}`` connects every command and run to this one server. It is
started through PySpark's own ``spark-submit`` with the settings of the platform's sessions
(no web UI, event log or listener; UTC; Delta Lake's extension and catalog; the connector jars;
the log configuration that keeps failed tasks' record text out of the logs): the command line
of :func:`dp_platform.warehouse.spark.session.connect_server_argv`, which replaces this process.
``--conf`` adds settings (driver memory, object-store keys) but may not change the private ones.

Anyone who reaches the port can read every table: keep the default loopback address, or put
the server behind an authenticating proxy (docs/operators.md, "Spark"). Ctrl-C or SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from dp_platform.errors import ConfigError

DEFAULT_PORT = 15002  # Spark Connect's own default


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})")
    parser.add_argument("--master", default="local[2]", help="the server's Spark master (local[2])")
    parser.add_argument(
        "--jars", help="directory of the Delta Lake and hadoop-aws jars (default: the venv's)"
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an extra Spark setting (repeatable; the private ones are refused)",
    )
    parser.add_argument(
        "--print", action="store_true", help="print the command line instead of running it"
    )
    parser.set_defaults(handler=run)


def _conf(pairs: list[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--conf {pair.split('=')[0]!r}: expected KEY=VALUE")
        conf[key.strip()] = value
    return conf


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from dp_platform.settings import SparkSettings
    from dp_platform.warehouse.spark.session import connect_server_argv

    try:
        settings = SparkSettings(master=args.master, jars=args.jars, conf=_conf(args.conf))
    except ValidationError as error:
        first = error.errors()[0]
        raise ConfigError(f"--conf: {first['msg'].removeprefix('Value error, ')}") from None
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port}: not a TCP port")
    argv = connect_server_argv(settings, args.host, args.port)
    if args.print:
        print(shlex.join(argv))
        return 0
    print(f"Spark Connect server: sc://{args.host}:{args.port}", file=sys.stderr, flush=True)
    os.execv(argv[0], argv)  # the JVM takes this process's place (and its signals)
    return 0  # not reached
