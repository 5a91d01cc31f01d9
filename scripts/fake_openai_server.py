"""Serve the test suite's fake OpenAI-compatible endpoint (tests/openai_server.py) until stopped.

For trying the LLM code paths (and `manage.py bench qa`) without a model: every chat request is
answered with the same fixed reply, token counts are words, embeddings are hashes. Answer
quality measured against it means nothing; call counts and prompt sizes do.

    .venv/bin/python scripts/fake_openai_server.py --port 8765 &
    OPENAI_BASE_URL=http://127.0.0.1:8765/v1 .venv/bin/python manage.py bench qa --data FILE
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.openai_server import OpenAIServer, _Server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    state = OpenAIServer(port=args.port)
    httpd = _Server(state)
    print(f"fake OpenAI-compatible endpoint on {state.base_url} (Ctrl-C stops it)", flush=True)
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        state._stopping.set()
        threading.Thread(target=httpd.server_close).start()


if __name__ == "__main__":
    main()
