# Each target sets up its own virtual environment, so a fresh machine needs only python3.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOME_DIR ?= .dp_home

SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test test-fast faults ui ui-screenshots browser postgres lint format bench results clean

# The platform and, beside it, the paper-reproduction harness (research/, package dp-research:
# `dp-platform evaluate`, `make results`), both editable. Operators install the root alone.
$(BIN)/dp-platform: pyproject.toml research/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' -e ./research
	touch $@

# The Spark engine's tests need PySpark (with its Spark Connect client) and Java 17+: installed
# here (Debian's JRE if the machine has no Java 17 or newer and apt-get can install it). Then the
# connector jars that spark-jars/pom.xml lists (Delta Lake, hadoop-aws and its AWS SDK bundle,
# ~700 MB) are copied from Maven Central into $(SPARK_JARS), afresh when the pom changes so no
# old version stays beside a new one; a failed copy prints one line and leaves the stamp out, so
# the next make tries again (the lake tests skip meanwhile, and fail under CI).
SPARK_JARS := $(VENV)/spark-jars
$(VENV)/.spark: $(BIN)/dp-platform spark-jars/pom.xml
	$(BIN)/pip install --quiet -e '.[dev,spark]'
	@if ! java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'; then \
		echo "Java 17+ not found: installing openjdk-17-jre-headless"; \
		( apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless ) \
		|| ( sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless ) \
		|| echo "WARNING: could not install Java 17; the Spark tests will skip (fail under CI)"; \
	fi
	@command -v mvn >/dev/null 2>&1 || ( $(SUDO) apt-get update -qq \
		&& $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven ) >/dev/null 2>&1 || true
	@rm -rf $(SPARK_JARS) && if mvn -B -q -f spark-jars/pom.xml dependency:copy-dependencies \
		-Djars.dir=$(abspath $(SPARK_JARS)) >$(VENV)/spark-jars.log 2>&1; then touch $@; \
	else echo "WARNING: could not fetch the Spark connector jars ($(VENV)/spark-jars.log says why)"; fi

# The main job on the embedded default: simulate a 31-day campaign, ingest it into DuckDB,
# materialise every day through Dagster (SQLite instance and ledger under $(HOME_DIR)), print
# the releases next to the truth and the budget, and write plots to $(HOME_DIR)/plots.
demo: $(BIN)/dp-platform
	$(BIN)/dp-platform plan examples/campaigns.yaml
	$(BIN)/dp-platform demo --home $(HOME_DIR)

# The tests' scratch files (pytest's tmp_path, every tempfile: homes, Dagster's SQLite storage,
# PostgreSQL's data directories) go to memory where the machine has /dev/shm: a test checks what
# a process wrote, never that it survives a power cut, and each fsync on disk costs milliseconds
# that hundreds of Dagster runs pay many times over (docs/testing.md). Removed after a passing
# run; kept after a failing one, where pytest's messages name the paths. World-writable like
# /tmp: the throwaway PostgreSQL servers run as the postgres user below it.
TEST_SCRATCH := $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo $${TMPDIR:-/tmp})

test: $(BIN)/dp-platform browser postgres $(VENV)/.spark
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	scratch=$$(mktemp -d $(TEST_SCRATCH)/dp-platform-tests.XXXXXX) && chmod 1777 $$scratch && \
	TMPDIR=$$scratch $(BIN)/pytest -q -n 2 --dist loadgroup --no-loadscope-reorder && rm -rf $$scratch  # both cores; a file (each of two groups of Spark files) on one worker: docs/testing.md

# The development loop: unit tests only (no Dagster, subprocess, Spark or browser; markers set
# in the root conftest.py), on both cores. `make test` still runs everything.
test-fast: $(BIN)/dp-platform
	$(BIN)/pytest -q -m "unit and not slow" -n 2

# The fault-injection harness's random schedules (not in `make test`, which runs the constructed
# ones): 50 seeded schedules per ledger backend, SQLite and a throwaway PostgreSQL side by side
# (docs/faults.md; about 1–2 minutes a schedule on 2 cores). Longer runs:
# `python -m tests.faults --schedules 1000 --seed 1 [--postgres] --json FILE`.
faults: $(BIN)/dp-platform postgres
	$(BIN)/python -m tests.faults --schedules 50 --seed 1 & \
	$(BIN)/python -m tests.faults --schedules 50 --seed 1 --postgres; pg=$$?; wait $$! && exit $$pg

# Debian's Chromium, which the browser test drives through Playwright (browser downloads from
# elsewhere do not work here, so never `playwright install`).
browser:
	@command -v chromium >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium)

# The PostgreSQL server binaries (initdb, pg_ctl): the tests start a throwaway server of their
# own (tests/postgres_server.py) for the ledger and Dagster's instance on PostgreSQL.
postgres:
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql)

# The Dagster UI on http://127.0.0.1:3000 over the demo's home (runs the demo first if needed);
# Ctrl-C stops it within 5 s.
ui: $(BIN)/dp-platform
	test -f $(HOME_DIR)/campaigns.yaml || $(BIN)/dp-platform demo --home $(HOME_DIR)
	$(BIN)/dp-platform ui --home $(HOME_DIR) --port 3000

# Regenerate the UI screenshots in docs/figures (docs/operators.md shows them): the browser test
# over a fresh demo home, saving what it sees.
ui-screenshots: $(BIN)/dp-platform browser
	DP_PLATFORM_SCREENSHOTS=docs/figures $(BIN)/pytest -q tests/browser

lint: $(BIN)/dp-platform
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(BIN)/dp-platform
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(BIN)/dp-platform
	$(BIN)/pytest -q --benchmark-enable --benchmark-only tests

# Regenerate every generated block of docs/results.md and docs/figures: the paper's Tables IX/X,
# sweeps and ablations, the AdsBPC+ blocks and the default mechanism's table from 1 000 to
# 200 000 users a day (about an hour; `dp-platform evaluate --scale-table --out docs/` writes that
# table alone). The command comes from the research package (research/), which the venv installs.
results: $(BIN)/dp-platform
	$(BIN)/dp-platform evaluate --all --out docs/

clean:
	rm -rf $(VENV) $(HOME_DIR) .pytest_cache
