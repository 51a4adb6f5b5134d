# Each target sets up its own virtual environment, so a fresh machine needs only python3.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOME_DIR ?= .dp_home

.PHONY: demo test ui lint format bench clean

$(BIN)/dp-platform: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/dp-platform
	$(BIN)/dp-platform plan examples/campaigns.yaml
	$(BIN)/dp-platform simulate examples/campaigns.yaml

test: $(BIN)/dp-platform
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest -q

lint: $(BIN)/dp-platform
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(BIN)/dp-platform
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(BIN)/dp-platform
	$(BIN)/pytest -q --benchmark-enable --benchmark-only tests

clean:
	rm -rf $(VENV) $(HOME_DIR) .pytest_cache
