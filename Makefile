# The two commands of the README, and the checks they run. See scripts/ for each step.
VENV := .venv
BIN := $(VENV)/bin
BUF := .buf/node_modules/.bin/buf
DEMO_ARGS ?=
## make bench: the commit bench.against compares the hot path with (BENCH_REF=917403f make bench)
BENCH_REF ?= HEAD~1

.PHONY: demo test check proto bootstrap bench clean

bootstrap:
	@scripts/bootstrap.sh

## make demo: Redis, the controller and three simulated tables, end to end (KEEP=1 keeps serving)
demo: bootstrap
	$(BIN)/python scripts/demo.py $(if $(KEEP),--keep-serving) $(DEMO_ARGS)

## make test: generated code fresh, lint, types, then the whole test suite
test: bootstrap check
	$(BIN)/python -m pytest

check: bootstrap
	$(BIN)/python scripts/gen_proto.py --check
	$(BIN)/python scripts/gen_line_counts.py --check
	$(BIN)/python scripts/gen_dashboards.py --check
	$(BIN)/python scripts/gen_error_docs.py --check
	$(BUF) lint proto
	$(BUF) breaking proto --against proto/releases/v0.1.0.binpb
	$(BIN)/python scripts/gen_api_docs.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## make proto: regenerate jackpot/v1 from proto/ after editing the .proto
proto: bootstrap
	$(BIN)/python scripts/gen_proto.py
	$(BIN)/python scripts/gen_api_docs.py

## make bench: the benchmarks in bench/ (loopback only, bounded in count and time; bench.scale: Redis Cluster of 1, 2, 3 shards)
bench: bootstrap
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.odds
	$(BIN)/python -m bench.settle_plan
	$(BIN)/python -m bench.hot_path
	$(BIN)/python -m bench.journal_memory
	$(BIN)/python -m bench.journal_hash
	$(BIN)/python -m bench.scale
	$(BIN)/python -m bench.against $(BENCH_REF) --together --pairs 8

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
