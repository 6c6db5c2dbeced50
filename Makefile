PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/meshtopo groups --mesh data=2,model=4 --over data
	$(BIN)/meshtopo expand "[4,2]<=[2,4]T(1,0)"
	$(BIN)/meshtopo devices --replicas 2 --partitions 2 --groups "{{0,1},{2,3}}" --channel-id --use-global-device-ids true
	$(BIN)/meshtopo inspect examples/data_model_2x4.hlo
	$(BIN)/meshtopo inspect examples/replicas_x_partitions.hlo
	$(BIN)/meshtopo check examples/broken.hlo || test $$? -eq 1

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

test: lint
	XLA_FLAGS=--xla_force_host_platform_device_count=8 $(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build dist src/*.egg-info
