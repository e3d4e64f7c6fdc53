"""Benchmarks of the controller: speed and memory as ratios against a baseline of the same run.

``python -m bench.run [--quick] [--json FILE]`` starts a real redis-server (AOF on, appendfsync
always) and the controller as a separate process, both on 127.0.0.1, drives them with bounded
load and prints the results. See :mod:`bench.run`.
"""
