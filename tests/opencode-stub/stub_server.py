#!/usr/bin/env python3
"""Stub OpenAI-compatible /v1/chat/completions server (streaming SSE) for driving opencode.

Binds 127.0.0.1 only. Behaviour is keyword driven on the LAST user text:
  TOOL:bash <cmd>   -> assistant emits a `bash` tool call running <cmd>
  TOOL:read <path>  -> assistant emits a `read` tool call for <path>
  BIGTEXT           -> long-ish text answer (to grow context)
  REASON            -> streams `reasoning_content` deltas before the text (reasoning part)
  FAIL400           -> HTTP 400 generic error (assistant message gets `error`)
  OVERFLOW400       -> first time only: HTTP 400 "maximum context length" error
                       (opencode maps it to ContextOverflowError -> compaction with overflow=true)
  (errors are not injected into compaction requests unless STUB_ERRORS_IN_COMPACTION=1,
   which reproduces the data set "errors-compaction-fails")
After a tool result (last message role == "tool") it answers with plain text.
Compaction requests (prompt containing the opencode summary template) get a
markdown summary. Title-generation requests get a short title.

Usage accounting: prompt_tokens = STUB_BASE_PROMPT (1500) + chars of the
non-system messages / 4 (system prompt and tool schemas are ignored), unless
STUB_MODE=noprogress, in which case every answer reports prompt_tokens =
STUB_FIXED_PROMPT (default 7600) -> opencode always thinks it overflows.
The mode can be switched at runtime by writing "normal"/"noprogress" into the
file named by $STUB_MODE_FILE; "noprogress:N" limits the overflow answers to
the next N requests (so the real opencode loop terminates by itself).
Every request is appended to $STUB_LOG (jsonl) for inspection.

session-doctor additions (this copy lives in tests/opencode-stub/; the original is
shared/tools/opencode-gen/stub_server.py):
  STUB_MAX_BODY_BYTES=N  every POST whose raw request body is larger than N bytes is
                         answered HTTP 413 with the Anthropic-like body
                         {"error":{"type":"request_too_large","message":"Request exceeds the
                         maximum allowed number of bytes."}} -- for every request kind
                         (chat turns, compaction/summary requests, title requests). Unset or
                         0 = no limit. Checked before anything else (FAIL400 etc.).
  STUB_PORT=0            bind a free loopback port; the port actually bound is written to
  STUB_PORT_FILE         (if set; written atomically once the socket listens).
  STUB_DUMP_DIR=D        write every raw request body to D/<n>.json (for inspection).
  Chunked request bodies (Transfer-Encoding: chunked) are read as well as Content-Length ones.
  Log lines (jsonl) carry for every request: "status" (200/400/413), "bytes" (raw body
  size), "nmsgs", "kind" (chat/compaction/title), "conv_bytes" (compact JSON of the
  non-system messages), "overhead_bytes" (= bytes - conv_bytes: system prompt, tool schemas
  and request options that the client adds), "sys_bytes", "tools_bytes", "max_msg_bytes".
"""
import json, os, sys, time, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(os.environ.get("STUB_PORT", "18931"))
MODE = os.environ.get("STUB_MODE", "normal")
FIXED = int(os.environ.get("STUB_FIXED_PROMPT", "7600"))
BASE = int(os.environ.get("STUB_BASE_PROMPT", "1500"))
LOG = os.environ.get("STUB_LOG", "stub_requests.jsonl")
MAX_BODY = int(os.environ.get("STUB_MAX_BODY_BYTES", "0") or "0")
PORT_FILE = os.environ.get("STUB_PORT_FILE")
DUMP_DIR = os.environ.get("STUB_DUMP_DIR")
TOO_LARGE = {"error": {"type": "request_too_large",
                       "message": "Request exceeds the maximum allowed number of bytes."}}
COUNTER = {"n": 0}

FILLER = ("The quick brown fox jumps over the lazy dog while the session doctor "
          "counts tokens and payload bytes for every stored message. ")


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for c in content:
            if isinstance(c, dict) and c.get("type") == "text":
                out.append(c.get("text", ""))
            elif isinstance(c, dict):
                out.append("[%s]" % c.get("type"))
        return "\n".join(out)
    return ""


def decide(req):
    msgs = req.get("messages", [])
    sys_text = "\n".join(text_of(m.get("content")) for m in msgs if m.get("role") == "system")
    last = msgs[-1] if msgs else {}
    # `opencode run "a b"` stores the prompt wrapped in double quotes -> strip them
    last_text = text_of(last.get("content")).strip().strip('"')
    all_user = "\n".join(text_of(m.get("content")) for m in msgs if m.get("role") == "user")
    has_tools = bool(req.get("tools"))
    # title generation (title agent: system prompt mentions title generator)
    if "title" in sys_text.lower() and ("generate" in sys_text.lower() or "title generator" in sys_text.lower()) and not has_tools:
        return {"kind": "text", "text": "Stub session title"}
    # compaction request: opencode summary template
    if ("Provide a detailed prompt for continuing our conversation" in all_user
            or "anchored summary" in all_user or "## Goal" in last_text
            or "summary" in sys_text.lower() and not has_tools):
        return {"kind": "text", "text": (
            "## Goal\n\nExercise the session doctor with a stub model.\n\n"
            "## Instructions\n\n- Keep answering briefly.\n\n## Discoveries\n\n"
            "- The stub server answers deterministically.\n\n## Accomplished\n\n"
            "- Several turns were exchanged (summary #%d).\n\n## Relevant files / directories\n\n- hello.txt\n" % COUNTER["n"])}
    if last.get("role") == "tool":
        out = text_of(last.get("content"))
        return {"kind": "text", "text": "The tool returned %d characters. First line: %s" % (
            len(out), (out.splitlines() or [""])[0][:120])}
    if has_tools and "TOOL:bash" in last_text:
        cmd = last_text.split("TOOL:bash", 1)[1].strip().splitlines()[0].rstrip('"') or "ls"
        return {"kind": "tool", "name": "bash", "args": {"command": cmd, "description": "Run stub command"}}
    if has_tools and "TOOL:read" in last_text:
        p = last_text.split("TOOL:read", 1)[1].strip().split()[0].rstrip('"')
        return {"kind": "tool", "name": "read", "args": {"filePath": p}}
    if "REASON" in last_text:
        return {"kind": "text", "reason": True, "text": "After thinking: the answer is 42."}
    if "BIGTEXT" in last_text:
        return {"kind": "text", "text": (FILLER * 40).strip()}
    return {"kind": "text", "text": "Stub reply #%d: acknowledged (%d chars of input)." % (COUNTER["n"], len(last_text))}


def jbytes(v):
    """Size of v as compact UTF-8 JSON (what JSON.stringify in the client produces)."""
    return len(json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def kind_of(req):
    """chat / compaction / title, for the log (same tests as decide())."""
    msgs = req.get("messages", []) or []
    sys_text = "\n".join(text_of(m.get("content")) for m in msgs if m.get("role") == "system").lower()
    all_user = "\n".join(text_of(m.get("content")) for m in msgs if m.get("role") == "user")
    has_tools = bool(req.get("tools"))
    if "title" in sys_text and ("generate" in sys_text or "title generator" in sys_text) and not has_tools:
        return "title"
    if ("Provide a detailed prompt for continuing our conversation" in all_user
            or "anchored summary" in all_user or ("summary" in sys_text and not has_tools)):
        return "compaction"
    return "chat"


def sizes(req, nraw):
    msgs = req.get("messages", []) or []
    conv = [jbytes(m) for m in msgs if m.get("role") != "system"]
    conv_bytes = sum(conv) + max(0, len(conv) - 1)  # + the commas between them
    return {"bytes": nraw, "nmsgs": len(msgs), "kind": kind_of(req),
            "conv_bytes": conv_bytes, "overhead_bytes": nraw - conv_bytes,
            "sys_bytes": sum(jbytes(m) for m in msgs if m.get("role") == "system"),
            "tools_bytes": jbytes(req.get("tools")) if req.get("tools") else 0,
            "max_msg_bytes": max(conv) if conv else 0}


def log(rec):
    with open(LOG, "a") as f:
        f.write(json.dumps(rec) + "\n")


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        sys.stderr.write("stub: " + fmt % a + "\n")

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "stub-small", "object": "model"}]}).encode()
            self.send_response(200); self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
            return
        self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()  # CRLF after each chunk
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)

    def do_POST(self):
        raw = self.read_body()
        try:
            req = json.loads(raw or b"{}")
        except Exception:
            req = {}
        if not isinstance(req, dict):
            req = {}
        COUNTER["n"] += 1
        if DUMP_DIR:
            with open(os.path.join(DUMP_DIR, "%d.json" % COUNTER["n"]), "wb") as f:
                f.write(raw)
        sz = sizes(req, len(raw))
        if MAX_BODY and len(raw) > MAX_BODY:
            log(dict({"n": COUNTER["n"], "path": self.path, "status": 413, "decision": "http413",
                      "limit": MAX_BODY}, **sz))
            self.send_json(413, TOO_LARGE)
            return
        last = (req.get("messages") or [{}])[-1]
        lt = text_of(last.get("content")) if last.get("role") == "user" else ""
        if "[User]:" in lt or "Provide a detailed prompt for continuing" in lt or "summary" in lt.lower()[:400]:
            lt = ""  # compaction request (serialized history): never inject errors there
        if os.environ.get("STUB_ERRORS_IN_COMPACTION") == "1":
            lt = text_of(last.get("content")) if last.get("role") == "user" else ""
        err = None
        if "FAIL400" in lt:
            err = {"error": {"message": "stub: invalid request (FAIL400)", "type": "invalid_request_error", "code": "stub_fail"}}
        elif "OVERFLOW400" in lt and not COUNTER.get("overflow_sent"):
            COUNTER["overflow_sent"] = True
            err = {"error": {"message": "This model's maximum context length is 8000 tokens. However, your messages resulted in 9100 tokens. Please reduce the length of the messages.",
                             "type": "invalid_request_error", "code": "context_length_exceeded"}}
        if err:
            log(dict({"n": COUNTER["n"], "path": self.path, "status": 400, "decision": "http400",
                      "error": err["error"]["code"]}, **sz))
            self.send_json(400, err)
            return
        d = decide(req)
        conv_chars = sum(len(json.dumps(m)) for m in req.get("messages", []) if m.get("role") != "system")
        prompt_tokens = BASE + conv_chars // 4
        mode = MODE
        mf = os.environ.get("STUB_MODE_FILE")
        if mf and os.path.exists(mf):
            mode = open(mf).read().strip() or MODE
        if mode.startswith("noprogress"):
            # "noprogress:N" -> only the next N responses report overflow usage, then normal again
            limit = int(mode.split(":", 1)[1]) if ":" in mode else None
            COUNTER["np"] = COUNTER.get("np", 0) + 1
            if limit is None or COUNTER["np"] <= limit:
                prompt_tokens = FIXED
        log(dict({"n": COUNTER["n"], "path": self.path, "status": 200, "decision": d["kind"],
                  "tools": len(req.get("tools") or []), "stream": req.get("stream"),
                  "prompt_tokens": prompt_tokens, "roles": [m.get("role") for m in req.get("messages", [])]}, **sz))
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        model = req.get("model", "stub-small")
        created = int(time.time())
        completion_tokens = 0
        chunks = []

        def chunk(delta, finish=None):
            return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        chunks.append(chunk({"role": "assistant", "content": ""}))
        if d.get("reason"):
            for piece in ["Let me think about this. ", "The user wants a short answer; ", "no tools are needed."]:
                chunks.append(chunk({"reasoning_content": piece}))
        if d["kind"] == "text":
            words = d["text"].split(" ")
            for i in range(0, len(words), 8):
                piece = " ".join(words[i:i + 8]) + (" " if i + 8 < len(words) else "")
                chunks.append(chunk({"content": piece}))
            completion_tokens = max(1, len(d["text"]) // 4) + (20 if d.get("reason") else 0)
            chunks.append(chunk({}, "stop"))
        else:
            call_id = "call_" + uuid.uuid4().hex[:10]
            args = json.dumps(d["args"])
            chunks.append(chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                                 "function": {"name": d["name"], "arguments": ""}}]}))
            chunks.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}))
            completion_tokens = max(1, len(args) // 4)
            chunks.append(chunk({}, "tool_calls"))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        if d.get("reason"):
            usage["completion_tokens_details"] = {"reasoning_tokens": 20}
        if not req.get("stream"):
            msg = {"role": "assistant", "content": d.get("text")}
            if d["kind"] == "tool":
                msg = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_x", "type": "function",
                       "function": {"name": d["name"], "arguments": json.dumps(d["args"])}}]}
            body = json.dumps({"id": cid, "object": "chat.completion", "created": created, "model": model,
                               "choices": [{"index": 0, "message": msg,
                                            "finish_reason": "stop" if d["kind"] == "text" else "tool_calls"}],
                               "usage": usage}).encode()
            self.send_response(200); self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
            return
        chunks.append({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                       "choices": [], "usage": usage})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for c in chunks:
            self.wfile.write(("data: " + json.dumps(c) + "\n\n").encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


if __name__ == "__main__":
    srv = ThreadingHTTPServer(("127.0.0.1", PORT), H)
    port = srv.server_address[1]
    if PORT_FILE:
        with open(PORT_FILE + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.replace(PORT_FILE + ".tmp", PORT_FILE)
    sys.stderr.write("stub listening on 127.0.0.1:%d mode=%s max_body=%s\n" % (port, MODE, MAX_BODY or "none"))
    srv.serve_forever()
