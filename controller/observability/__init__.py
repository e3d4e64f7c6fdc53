"""What the controller shows of itself: Prometheus metrics, the metrics port, log lines."""
