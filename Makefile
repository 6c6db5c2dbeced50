PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: the demo needs meshtopo alone; the tests need every extra.
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test bench lint clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The compiled scanners (setup.py) are rebuilt when their sources change.
BUILD_INPUTS := pyproject.toml setup.py src/meshtopo/hlo/_reader.py $(wildcard src/meshtopo/hlo/*.c src/meshtopo/hlo/*.h src/meshtopo/order/*.c)

$(DEMO_STAMP): $(BUILD_INPUTS) | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e .
	touch $(DEMO_STAMP)

$(TEST_STAMP): $(BUILD_INPUTS) | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(TEST_STAMP) $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/meshtopo groups --mesh data=2,model=4 --over data
	$(BIN)/meshtopo expand "[4,2]<=[2,4]T(1,0)"
	$(BIN)/meshtopo devices --replicas 2 --partitions 2 --groups "{{0,1},{2,3}}" --channel-id --use-global-device-ids true
	$(BIN)/meshtopo inspect examples/data_model_2x4.hlo
	$(BIN)/meshtopo inspect examples/replicas_x_partitions.hlo
	$(BIN)/meshtopo check examples/broken.hlo || test $$? -eq 1

lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

test: lint
	XLA_FLAGS=--xla_force_host_platform_device_count=8 $(BIN)/pytest -q

bench: $(TEST_STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build dist src/*.egg-info src/meshtopo/hlo/*.so
