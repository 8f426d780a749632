"""A stand-in OpenAI-compatible server (what vLLM, SGLang, Ollama and lab endpoints serve), for tests and demos.

It answers ``GET /v1/models`` and ``POST /v1/chat/completions`` over real HTTP on 127.0.0.1, with the offline demo's
hand-written transcript (``cudaforge/resources/demo/``) as the "model", so a run on the ``tiny`` suite gets kernels
that work. Its ``mode`` says how it behaves:

- ``up``: answers;
- ``down``: fails every request, in turn dropping the connection, answering 429 (with ``Retry-After: 0``) and 500;
- ``auth``: 401 (a key was demanded and not given);

and ``down_tasks`` makes the requests of some tasks fail as in ``down`` while the others are answered. With
``replies`` it answers those texts in order instead of the transcript's (a test's scripted model). ``bodies`` keeps
the JSON body of every request it answered, as it came over the wire.

``python tests/standins/llm_server.py --port 8000 --name my-model`` runs one by hand (docs/own-model.md).
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml


class StandInServer:
    """The server, on a thread of its own; ``url`` is its ``/v1`` base address."""

    def __init__(
        self, name: str = "standin-coder", port: int = 0, api_key: str | None = None, replies: list[str] | None = None
    ) -> None:
        from cudaforge.llm.cache import TASK_IN_PROMPT
        from cudaforge.run.demo import TRANSCRIPT, DemoTranscriptError, demo_reply

        transcript = yaml.safe_load(TRANSCRIPT.read_text())
        self.name, self.api_key, self.mode = name, api_key, "up"
        self.down_tasks: set[str] = set()
        """Tasks (the last part of their id, ``2_Softmax``) whose requests fail as in ``down`` mode while ``up``."""
        self.requests: list[tuple[str, str]] = []  # (path, outcome)
        self.bodies: list[dict] = []  # the answered chat requests' bodies
        scripted = iter(replies) if replies is not None else None
        failures = itertools.cycle(["drop", "429", "500"])
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, code: int, body: dict, headers: dict | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _refuse(self, path: str, body: dict | None = None) -> bool:
                if server.mode == "auth" or (
                    server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}"
                ):
                    server.requests.append((path, "401"))
                    self._send(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
                    return True
                user = next(
                    (str(m.get("content")) for m in (body or {}).get("messages", []) if m.get("role") == "user"), ""
                )
                found = TASK_IN_PROMPT.search(user)
                task_down = bool(found and found.group(1).rsplit("/", 1)[-1] in server.down_tasks)
                if server.mode == "down" or task_down:
                    how = next(failures)
                    server.requests.append((path, how))
                    if how == "drop":
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                    elif how == "429":
                        self._send(
                            429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": "0"}
                        )
                    else:
                        self._send(500, {"error": {"message": "internal error", "type": "server_error"}})
                    return True
                return False

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/") != "/v1/models":
                    self._send(404, {"error": {"message": f"no {self.path}"}})
                    return
                if not self._refuse(self.path):
                    server.requests.append((self.path, "200"))
                    self._send(
                        200, {"object": "list", "data": [{"id": server.name, "object": "model", "owned_by": "standin"}]}
                    )

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no {self.path}"}})
                    return
                if self._refuse(self.path, body):
                    return
                if body.get("model") != server.name:
                    server.requests.append((self.path, "404"))
                    self._send(
                        404,
                        {
                            "error": {
                                "message": f"The model `{body.get('model')}` does not exist.",
                                "type": "NotFoundError",
                            }
                        },
                    )
                    return
                try:
                    text = next(scripted) if scripted is not None else demo_reply(body["messages"], transcript)
                except StopIteration:
                    server.requests.append((self.path, "400"))
                    self._send(400, {"error": {"message": "no scripted reply left", "type": "invalid_request_error"}})
                    return
                except DemoTranscriptError as exc:
                    server.requests.append((self.path, "400"))
                    self._send(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
                    return
                server.requests.append((self.path, "200"))
                server.bodies.append(body)
                prompt = sum(len(str(m.get("content", ""))) for m in body["messages"]) // 4
                self._send(
                    200,
                    {
                        "id": f"standin-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": server.name,
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": len(text) // 4,
                            "total_tokens": prompt + len(text) // 4,
                        },
                    },
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> StandInServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--name", default="standin-coder")
    parser.add_argument("--api-key", default=None)
    args = parser.parse_args()
    with StandInServer(args.name, args.port, args.api_key) as server:
        print(f"serving {args.name!r} at {server.url} (Ctrl-C stops)", flush=True)
        try:
            server.thread.join()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
