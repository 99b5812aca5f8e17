"""A token stream the way OpenAI-style chat APIs send one: POST /v1/chat/completions
with a JSON body {"prompt": "...", "stream": true} answers a `text/event-stream`, one
`data: {"choices": [{"delta": {"content": WORD}}]}` event per word of the prompt,
DELAY_MS (default 10) apart, then `data: [DONE]`. Flask's streamed response, served by
Werkzeug (its own chunked encoding), on 127.0.0.1 and the port given (0: any free
one), which it prints once listening. For crates/cli/tests/flows.rs; Flask comes from
.ci/setup/traced-app.sh's venv."""

import json
import os
import sys
import time

from flask import Flask, Response, request
from werkzeug.serving import make_server

DELAY_SECONDS = float(os.environ.get("DELAY_MS", "10")) / 1000.0
app = Flask(__name__)


@app.post("/v1/chat/completions")
def completions():
    asked = request.get_json(silent=True) or {}
    words = str(asked.get("prompt", "")).split()

    def events():
        for word in words:
            time.sleep(DELAY_SECONDS)
            delta = {"choices": [{"delta": {"content": word}}]}
            yield f"data: {json.dumps(delta)}\n\n"
        yield "data: [DONE]\n\n"

    return Response(events(), mimetype="text/event-stream")


if __name__ == "__main__":
    server = make_server("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0, app, threaded=True)
    print(server.server_port, flush=True)
    server.serve_forever()
