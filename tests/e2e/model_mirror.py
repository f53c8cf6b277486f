"""A loopback HTTP server that serves GGUF files the way a Hugging Face mirror does.

    /ORG/REPO/resolve/main/FILE  302 to /cdn/SHA with X-Linked-Etag and X-Linked-Size
    /cdn/SHA                     the bytes, with Range support and a CDN's own ETag
    /api/models/ORG/REPO/tree/main   the repository listing (JSON)
    /files/NAME                  the bytes, plain: Content-Length and nothing else

Knobs for the tests: cut_after (the next body stops after that many bytes and the
connection closes), throttle (seconds to sleep per MiB sent), wrong_etag (announce a
hash that is not the file's); bytes_sent counts body bytes over all requests.
"""
import hashlib
import http.server
import json
import re
import threading
import time


class Mirror:
    def __init__(self):
        self.repos = {}       # "org/repo" -> {path: bytes}
        self.files = {}       # name -> bytes (plain /files/)
        self.raw = {}         # name -> (content type, bytes): non-GGUF answers
        self.by_sha = {}
        self.bytes_sent = 0
        self.gets = 0
        self.cut_after = None
        self.throttle = 0.0
        self.wrong_etag = False
        self.lock = threading.Lock()
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                mirror.answer(self, head=True)

            def do_GET(self):
                mirror.answer(self, head=False)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add_repo_file(self, repo, path, data):
        self.repos.setdefault(repo, {})[path] = data
        self.by_sha[hashlib.sha256(data).hexdigest()] = data

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # --- answers ---------------------------------------------------------------

    def answer(self, h, head):
        path = h.path.split("?")[0]
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/main", path)
        if m:
            files = self.repos.get(m.group(1))
            if files is None:
                return self.plain(h, 404, b'{"error":"Repository not found"}', head)
            listing = [{"type": "file", "path": p, "size": len(d)} for p, d in files.items()]
            return self.plain(h, 200, json.dumps(listing).encode(), head, "application/json")
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/main/(.+)", path)
        if m:
            data = self.repos.get(m.group(1), {}).get(m.group(2))
            if data is None:
                return self.plain(h, 404, b"Entry not found", head)
            sha = hashlib.sha256(data).hexdigest()
            announced = ("0" * 64) if self.wrong_etag else sha
            h.send_response(302)
            h.send_header("Location", f"/cdn/{sha}")
            h.send_header("X-Linked-Etag", f'"{announced}"')
            h.send_header("X-Linked-Size", str(len(data)))
            h.send_header("ETag", '"W/abc-not-the-content-hash"')
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        m = re.fullmatch(r"/cdn/([0-9a-f]{64})", path)
        if m and m.group(1) in self.by_sha:
            return self.body(h, self.by_sha[m.group(1)], head, etag='"cdn-1234"')
        m = re.fullmatch(r"/files/(.+)", path)
        if m and m.group(1) in self.files:
            return self.body(h, self.files[m.group(1)], head)
        if m and m.group(1) in self.raw:
            kind, data = self.raw[m.group(1)]
            return self.plain(h, 200, data, head, kind)
        return self.plain(h, 404, b"not found", head)

    def plain(self, h, status, data, head, kind="text/plain"):
        h.send_response(status)
        h.send_header("Content-Type", kind)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if not head:
            h.wfile.write(data)

    def body(self, h, data, head, etag=None):
        start, status = 0, 200
        rng = h.headers.get("Range")
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-", rng.strip())
            if m:
                start, status = int(m.group(1)), 206
                if start >= len(data):
                    h.send_response(416)
                    h.send_header("Content-Range", f"bytes */{len(data)}")
                    h.send_header("Content-Length", "0")
                    h.end_headers()
                    return
        h.send_response(status)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(len(data) - start))
        if status == 206:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        if etag:
            h.send_header("ETag", etag)
        h.end_headers()
        if head:
            return
        with self.lock:
            self.gets += 1
            cut, self.cut_after = self.cut_after, None
        end = len(data) if cut is None else min(len(data), start + cut)
        chunk = 1 << 20
        try:
            for offset in range(start, end, chunk):
                piece = data[offset:min(end, offset + chunk)]
                h.wfile.write(piece)
                with self.lock:
                    self.bytes_sent += len(piece)
                if self.throttle:
                    time.sleep(self.throttle)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return
        if cut is not None:
            h.close_connection = True
            h.connection.shutdown(2)
