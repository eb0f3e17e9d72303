"""Load benchmark: agent-runtime against the bare-proxy floor, on loopback (issue 6; `make bench`)."""
