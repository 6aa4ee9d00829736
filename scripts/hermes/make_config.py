#!/usr/bin/env python3
"""Write a hermes config.yaml that points the model at the loopback stub.

Usage: make_config.py BASE|- PORT OUT
  BASE  a hermes config.yaml to start from (e.g. the config.yaml a generator saved beside a
        state.db: it carries compression.in_place, agent.image_input_mode, model.supports_vision),
        or '-' for the generator's defaults (rotation mode, 64000-token window, terminal tool).
Whatever BASE says, the result uses provider 'custom', model 'stub-model', base_url
http://127.0.0.1:PORT/v1, a dummy key, tirith off, and no JSON snapshots.
Needs PyYAML: run it with the hermes venv's python (HERMES_PY).
"""
import sys

import yaml

DEFAULT = {
    "model": {"context_length": 64000},
    "toolsets": ["terminal"],
    "compression": {"enabled": True, "in_place": False, "protect_first_n": 1,
                    "protect_last_n": 4},
    "agent": {"image_input_mode": "auto"},
}


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    base, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if base == "-":
        cfg = DEFAULT
    else:
        with open(base) as f:
            cfg = yaml.safe_load(f) or {}
    model = cfg.setdefault("model", {})
    model.update({"provider": "custom", "default": "stub-model",
                  "base_url": f"http://127.0.0.1:{port}/v1", "api_key": "sk-stub-local"})
    model.setdefault("context_length", 64000)
    cfg.setdefault("security", {})["tirith_enabled"] = False
    cfg.setdefault("sessions", {})["write_json_snapshots"] = False
    with open(out, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
