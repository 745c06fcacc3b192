# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
ZOO_MODEL ?= skipnet

.PHONY: run test bench clean

$(STAMP): setup.cfg setup.py constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[convert,test,tvm,tune,bench,ray]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/dycl convert models_zoo/$(ZOO_MODEL).py -o build/$(ZOO_MODEL)
	@echo
	@cat build/$(ZOO_MODEL)/report.md | head -12
	@echo
	$(VENV)/bin/dycl run build/$(ZOO_MODEL) --repeat 3

# One pytest worker per core; a test file stays on one worker (module fixtures: the Ray cluster).
test: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadfile

bench: $(STAMP)
	$(PY) scripts/bench.py

clean:
	rm -rf build .pytest_cache
