"""A local stand-in for the part of the Hugging Face Hub API that uploads use.

stdlib http.server in a thread on 127.0.0.1 (random port). It speaks what
huggingface_hub 2.x sends for create_repo / create_commit (see hf_api.py,
_commit_api.py and lfs.py of the installed package):

    POST /api/repos/create                           {"name", "organization", "visibility"}
    GET  /api/models/{ns}/{name}[/revision/{rev}]    repo info (404 RepoNotFound if unknown)
    POST /api/models/{ns}/{name}/preupload/{rev}     uploadMode lfs|regular per file
    POST /{ns}/{name}.git/info/lfs/objects/batch     upload + verify hrefs back to this server
    PUT  /lfs/{ns}/{name}/{oid}?sig=...              the object (no auth, like a presigned URL)
    POST /lfs-verify/{ns}/{name}                     {"oid", "size"}
    POST /api/models/{ns}/{name}/commit/{rev}        NDJSON: header, file (base64), lfsFile

and what downloads use (hf_api.py list_repo_tree / get_paths_info, file_download.py
get_hf_file_metadata / hf_hub_url), {rev} being "main" or a commit oid:

    GET  /api/models/{ns}/{name}/tree/{rev}[/{path}]  entries (?recursive=): type, path, size,
                                                      oid (git blob sha1), lfs {oid: sha256,
                                                      size, pointerSize}; 404 EntryNotFound
    POST /api/models/{ns}/{name}/paths-info/{rev}     form: paths=..., expand=...
    GET|HEAD /{ns}/{name}/resolve/{rev}/{path}        a regular file: 200, ETag = git sha1;
                                                      an LFS file: 302 to the "CDN" below with
                                                      X-Linked-Etag (sha256) and X-Linked-Size
    GET|HEAD /cdn/{oid}/{path}?sig=...                the LFS object (no auth, presigned), on a
                                                      second port (`cdn_url`): another origin

Bearer tokens are checked: an unknown token gets 401 "Invalid credentials in
Authorization header"; a token without write access, or writing outside its
namespaces, gets 403. What arrived is kept for assertions: repos (private flag,
commits with their files), LFS objects on disk by oid, every PUT (claimed oid,
sha256 of the bytes actually received, size), every request line.

Fault knobs: `fail_commits(status, times)`, `fail_reads(status, times)` (the next
listings and paths-info answers: a 5xx, a 429, ...), `endless_listing` (every tree page
links a next one), `drip_listing_s` (a tree listing's body comes 16 bytes at a time, this
many seconds apart), `stall_put_s`, `stall_commit_s`
(sleep past the client's timeout before answering; cut short by stop()),
`fault_download(path, how)`: the next GET of that repo path's bytes is served wrong
("flip": one byte changed, same length; "cut": the connection closes half-way;
"extra": one byte too many), `stall_download_s`.
Bounded: bodies over `max_body` bytes get 413; the server stops at teardown and
by itself after `max_lifetime_s`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

LFS_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".zip", ".ckpt")
LFS_MIN_SIZE = 10 * 1024 * 1024
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"


@dataclass(frozen=True)
class Token:
    user: str
    orgs: tuple[str, ...] = ()
    write: bool = True


@dataclass
class StoredFile:
    sha256: str
    size: int
    lfs: bool
    content: bytes | None = None  # regular files; LFS bytes live in the object store


@dataclass
class Commit:
    oid: str
    message: str
    files: dict[str, StoredFile]  # the whole tree after this commit
    changed: tuple[str, ...]  # paths this commit added or changed


@dataclass
class Repo:
    repo_id: str
    private: bool
    commits: list[Commit] = field(default_factory=list)

    @property
    def tree(self) -> dict[str, StoredFile]:
        return dict(self.commits[-1].files) if self.commits else {}

    @property
    def head(self) -> str:
        return self.commits[-1].oid if self.commits else "0" * 40


@dataclass(frozen=True)
class PutRecord:
    oid: str  # the oid the URL claimed
    sha256: str  # sha256 of the bytes received
    size: int


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HubServer:
    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        tokens: dict[str, Token] | None = None,
        max_body: int = 256 * 1024 * 1024,
        max_lifetime_s: float = 300.0,
    ):
        self._own_storage = storage_dir is None
        self.storage_dir = storage_dir or tempfile.mkdtemp(prefix="hubserver-")
        os.makedirs(os.path.join(self.storage_dir, "lfs"), exist_ok=True)
        self.tokens: dict[str, Token] = dict(tokens or {})
        self.max_body = max_body
        self.max_lifetime_s = max_lifetime_s
        self.lock = threading.RLock()
        self.repos: dict[str, Repo] = {}
        self.lfs_objects: dict[str, int] = {}  # oid -> size
        self.puts: list[PutRecord] = []
        self.requests: list[tuple[str, str]] = []  # (method, path)
        self.auth_headers: list[str | None] = []
        self.cdn_auth_headers: list[str | None] = []  # what reached the "CDN": never a token
        self.stall_put_s = 0.0
        self.stall_commit_s = 0.0
        self.stall_download_s = 0.0
        self._commit_failures: list[int] = []
        self._read_failures: list[int] = []
        self.endless_listing = False
        self.drip_listing_s = 0.0
        self._download_faults: list[tuple[str, str]] = []  # (repo path, how)
        self._sig = secrets.token_hex(8)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._cdn_httpd: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._timer: threading.Timer | None = None

    # -- life ------------------------------------------------------------------

    def start(self) -> HubServer:
        server = self

        class Handler(_Handler):
            hub = server

        # the Hub, and the "CDN" LFS downloads are redirected to: another origin, as on the
        # real Hub (a client drops the Authorization header when it follows the redirect)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._cdn_httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        for httpd in (self._httpd, self._cdn_httpd):
            httpd.daemon_threads = True
            thread = threading.Thread(
                target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            thread.start()
            self._threads.append(thread)
        self._timer = threading.Timer(self.max_lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._timer is not None:
            self._timer.cancel()
        servers = (self._httpd, self._cdn_httpd)
        self._httpd = self._cdn_httpd = None
        for httpd in servers:
            if httpd is not None:
                httpd.shutdown()
                httpd.server_close()
        with self.lock:  # kept-alive connections would go on being served
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._own_storage:
            shutil.rmtree(self.storage_dir, ignore_errors=True)

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def cdn_url(self) -> str:
        assert self._cdn_httpd is not None, "not started"
        host, port = self._cdn_httpd.server_address[:2]
        return f"http://{host}:{port}"

    # -- knobs -----------------------------------------------------------------

    def fail_commits(self, status: int = 500, times: int = 1) -> None:
        with self.lock:
            self._commit_failures.extend([status] * times)

    def fail_reads(self, status: int = 500, times: int = 1) -> None:
        """The next `times` listings / paths-info requests answer `status`."""
        with self.lock:
            self._read_failures.extend([status] * times)

    def fault_download(self, path: str, how: str = "flip", times: int = 1) -> None:
        """Serve the bytes of repo path `path` wrong the next `times` GETs (see the doc)."""
        assert how in ("flip", "cut", "extra"), how
        with self.lock:
            self._download_faults.extend([(path, how)] * times)

    def clear_faults(self) -> None:
        """Every fault and stall knob back to normal."""
        with self.lock:
            self._download_faults.clear()
            self._commit_failures.clear()
            self._read_failures.clear()
        self.endless_listing = False
        self.drip_listing_s = 0.0
        self.stall_put_s = self.stall_commit_s = self.stall_download_s = 0.0

    def _take_fault(self, path: str) -> str | None:
        with self.lock:
            for i, (fault_path, how) in enumerate(self._download_faults):
                if fault_path == path:
                    del self._download_faults[i]
                    return how
        return None

    def add_token(self, token: str, user: str, orgs: tuple[str, ...] = (), write: bool = True):
        self.tokens[token] = Token(user, tuple(orgs), write)

    def create_repo(self, repo_id: str, private: bool = False) -> Repo:
        with self.lock:
            repo = self.repos.setdefault(repo_id, Repo(repo_id, private))
            return repo

    def stall(self, seconds: float) -> None:
        """Sleep `seconds` unless the server is stopping."""
        self._stopping.wait(seconds)

    # -- what arrived ---------------------------------------------------------

    def object_path(self, oid: str) -> str:
        return os.path.join(self.storage_dir, "lfs", oid)

    def file_bytes(self, repo_id: str, path: str, commit: int = -1) -> bytes:
        with self.lock:
            stored = self.repos[repo_id].commits[commit].files[path]
        if stored.lfs:
            with open(self.object_path(stored.sha256), "rb") as handle:
                return handle.read()
        assert stored.content is not None
        return stored.content

    def commits(self, repo_id: str) -> list[Commit]:
        with self.lock:
            repo = self.repos.get(repo_id)
            return list(repo.commits) if repo else []

    def count(self, method: str, pattern: str) -> int:
        with self.lock:
            return sum(1 for m, p in self.requests if m == method and re.search(pattern, p))


def _token_of(header: str | None) -> str | None:
    if header and header.lower().startswith("bearer "):
        return header[7:].strip()
    return None


class _Handler(BaseHTTPRequestHandler):
    hub: HubServer
    protocol_version = "HTTP/1.1"
    server_version = "FakeHub/1"

    def log_message(self, format, *args):  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.hub.lock:
            self.hub._connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.hub.lock:
                self.hub._connections.discard(self.connection)

    # -- plumbing -----------------------------------------------------------

    def _send(self, status: int, body=None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _error(self, status: int, message: str, code: str | None = None) -> None:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self._send(status, {"error": message}, headers)

    def _body_chunks(self):
        """The request body in chunks (Content-Length or chunked); raises ValueError if too big."""
        length = self.headers.get("Content-Length")
        total = 0
        if length is not None:
            remaining = int(length)
            if remaining > self.hub.max_body:
                raise ValueError("too big")
            while remaining:
                chunk = self.rfile.read(min(remaining, 1024 * 1024))
                if not chunk:
                    raise ConnectionResetError("short body")
                remaining -= len(chunk)
                yield chunk
            return
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return
                total += size
                if total > self.hub.max_body:
                    raise ValueError("too big")
                chunk = self.rfile.read(size)
                self.rfile.readline()
                yield chunk

    def _body(self) -> bytes:
        return b"".join(self._body_chunks())

    def _json_body(self):
        data = self._body()
        return json.loads(data) if data else {}

    def _auth(self) -> Token | None | bool:
        """The token's owner; False when a token was sent and is unknown (401 sent)."""
        header = self.headers.get("Authorization")
        with self.hub.lock:
            self.hub.auth_headers.append(header)
        token = _token_of(header)
        if token is None:
            return None
        owner = self.hub.tokens.get(token)
        if owner is None:
            self._error(401, INVALID_CREDENTIALS)
            return False
        return owner

    def _repo_for_write(self, repo_id: str) -> Repo | None:
        """The repo when the token may write to it; else the error is sent and None."""
        owner = self._auth()
        if owner is False:
            return None
        if owner is None:
            self._error(401, INVALID_CREDENTIALS)
            return None
        with self.hub.lock:
            repo = self.hub.repos.get(repo_id)
        ns = repo_id.split("/")[0]
        allowed = ns == owner.user or ns in owner.orgs
        if repo is None or (repo.private and not allowed):
            self._error(404, "Repository not found", "RepoNotFound")
            return None
        if not owner.write or not allowed:
            self._error(403, f"You don't have write access to {repo_id}")
            return None
        return repo

    # -- routing ------------------------------------------------------------

    def _route(self, method: str) -> None:
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        with self.hub.lock:
            self.hub.requests.append((method, path))
        try:
            self._dispatch(method, path, parse_qs(parts.query))
        except ValueError as exc:
            self.close_connection = True
            if str(exc) == "too big":
                self._error(413, "payload too large")
            else:
                self._error(400, f"bad request: {exc}")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_HEAD(self) -> None:
        self._route("HEAD")

    def _dispatch(self, method: str, path: str, query: dict) -> None:
        repo = r"(?P<repo>[^/]+/[^/]+?)"
        routes = [
            ("POST", r"/api/repos/create", self._create_repo),
            ("GET", rf"/api/models/{repo}(/revision/(?P<rev>[^/]+))?", self._repo_info),
            ("POST", rf"/api/models/{repo}/preupload/(?P<rev>[^/]+)", self._preupload),
            ("POST", rf"/{repo}\.git/info/lfs/objects/batch", self._lfs_batch),
            ("PUT", rf"/lfs/{repo}/(?P<oid>[0-9a-f]{{64}})", self._lfs_put),
            ("POST", rf"/lfs-verify/{repo}", self._lfs_verify),
            ("POST", rf"/api/models/{repo}/commit/(?P<rev>[^/]+)", self._commit),
            ("GET", rf"/api/models/{repo}/tree/(?P<rev>[^/]+)(?:/(?P<path>.+))?", self._tree),
            ("POST", rf"/api/models/{repo}/paths-info/(?P<rev>[^/]+)", self._paths_info),
            ("GET", rf"/{repo}/resolve/(?P<rev>[^/]+)/(?P<path>.+)", self._resolve),
            ("HEAD", rf"/{repo}/resolve/(?P<rev>[^/]+)/(?P<path>.+)", self._resolve),
            ("GET", r"/cdn/(?P<oid>[0-9a-f]{64})/(?P<path>.+)", self._cdn),
            ("HEAD", r"/cdn/(?P<oid>[0-9a-f]{64})/(?P<path>.+)", self._cdn),
        ]
        download_routes = (self._tree, self._paths_info, self._resolve, self._cdn)
        for want, pattern, handler in routes:
            m = re.fullmatch(pattern, path)
            if m and want == method:
                groups = m.groupdict()
                if handler not in download_routes:
                    groups.pop("rev", None)
                handler(query=query, **groups)
                return
        if method != "HEAD":
            self._body()
        self._error(404, f"no route for {method} {path}")

    # -- endpoints ----------------------------------------------------------

    def _create_repo(self, query) -> None:
        payload = self._json_body()
        owner = self._auth()
        if owner is False:
            return
        if owner is None:
            self._error(401, INVALID_CREDENTIALS)
            return
        name = payload.get("name")
        ns = payload.get("organization") or owner.user
        repo_id = f"{ns}/{name}"
        if not owner.write or not (ns == owner.user or ns in owner.orgs):
            self._error(
                403, f'You don\'t have the rights to create a model under the namespace "{ns}"'
            )
            return
        private = payload.get("visibility") == "private" or payload.get("private") is True
        with self.hub.lock:
            if repo_id in self.hub.repos:
                self._send(
                    409,
                    {
                        "error": "You already created this model repo",
                        "url": f"{self.hub.url}/{repo_id}",
                    },
                    {"X-Error-Message": "You already created this model repo"},
                )
                return
            self.hub.repos[repo_id] = Repo(repo_id, private)
        self._send(200, {"url": f"{self.hub.url}/{repo_id}", "name": repo_id, "id": repo_id})

    def _repo_info(self, repo, query) -> None:
        owner = self._auth()
        if owner is False:
            return
        with self.hub.lock:
            found = self.hub.repos.get(repo)
            if found is not None:
                tree, head, private = found.tree, found.head, found.private
        ns = repo.split("/")[0]
        visible = found is not None and (
            not private or (owner and (ns == owner.user or ns in owner.orgs))
        )
        if not visible:
            self._error(404, "Repository not found", "RepoNotFound")
            return
        self._send(
            200,
            {
                "id": repo,
                "modelId": repo,
                "sha": head,
                "private": private,
                "siblings": [{"rfilename": p} for p in sorted(tree)],
            },
        )

    def _preupload(self, repo, query) -> None:
        payload = self._json_body()
        found = self._repo_for_write(repo)
        if found is None:
            return
        tree = found.tree
        files = []
        for f in payload.get("files", []):
            sample = base64.b64decode(f.get("sample", ""))
            lfs = (
                f["path"].endswith(LFS_SUFFIXES)
                or b"\0" in sample
                or int(f.get("size", 0)) >= LFS_MIN_SIZE
            )
            existing = tree.get(f["path"])
            oid = None
            if existing is not None:
                oid = existing.sha256 if existing.lfs else git_blob_sha1(existing.content or b"")
            files.append(
                {
                    "path": f["path"],
                    "uploadMode": "lfs" if lfs else "regular",
                    "shouldIgnore": False,
                    "oid": oid,
                }
            )
        self._send(200, {"files": files, "commitOid": found.head})

    def _lfs_batch(self, repo, query) -> None:
        payload = self._json_body()
        found = self._repo_for_write(repo)
        if found is None:
            return
        objects = []
        for obj in payload.get("objects", []):
            oid, size = obj["oid"], int(obj["size"])
            entry = {"oid": oid, "size": size, "authenticated": True}
            with self.hub.lock:
                present = self.hub.lfs_objects.get(oid) == size
            if not present:
                entry["actions"] = {
                    "upload": {"href": f"{self.hub.url}/lfs/{repo}/{oid}?sig={self.hub._sig}"},
                    "verify": {"href": f"{self.hub.url}/lfs-verify/{repo}"},
                }
            objects.append(entry)
        self._send(
            200,
            {"transfer": "basic", "objects": objects},
            {"Content-Type": "application/vnd.git-lfs+json"},
        )

    def _lfs_put(self, repo, oid, query) -> None:
        if query.get("sig") != [self.hub._sig]:
            self._body()
            self._error(403, "bad signature")
            return
        digest = hashlib.sha256()
        size = 0
        fd, tmp = tempfile.mkstemp(dir=os.path.join(self.hub.storage_dir, "lfs"), suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in self._body_chunks():
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
            actual = digest.hexdigest()
            with self.hub.lock:
                self.hub.puts.append(PutRecord(oid, actual, size))
            if self.hub.stall_put_s:
                self.close_connection = True
                self.hub.stall(self.hub.stall_put_s)
                if self.hub._stopping.is_set():
                    return
            if actual != oid:
                self._error(400, f"sha256 mismatch: the URL says {oid}, the bytes are {actual}")
                return
            os.replace(tmp, self.hub.object_path(oid))
            with self.hub.lock:
                self.hub.lfs_objects[oid] = size
            self._send(200, None, {"ETag": f'"{oid[:32]}"'})
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def _lfs_verify(self, repo, query) -> None:
        payload = self._json_body()
        found = self._repo_for_write(repo)
        if found is None:
            return
        with self.hub.lock:
            size = self.hub.lfs_objects.get(payload.get("oid"))
        if size is None or size != payload.get("size"):
            self._error(404, "object not found")
            return
        self._send(200, {"success": True})

    def _commit(self, repo, query) -> None:
        data = self._body()
        found = self._repo_for_write(repo)
        if found is None:
            return
        with self.hub.lock:
            failure = self.hub._commit_failures.pop(0) if self.hub._commit_failures else None
        if failure is not None:
            self._error(failure, "Internal Error - We're working hard to fix this")
            return
        if self.hub.stall_commit_s:
            self.close_connection = True
            self.hub.stall(self.hub.stall_commit_s)
            return
        message = None
        tree = found.tree
        changed = []
        for line in data.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key, value = item.get("key"), item.get("value", {})
            if key == "header":
                message = value.get("summary")
            elif key == "file":
                content = base64.b64decode(value["content"])
                tree[value["path"]] = StoredFile(
                    hashlib.sha256(content).hexdigest(), len(content), False, content
                )
                changed.append(value["path"])
            elif key == "lfsFile":
                oid = value["oid"]
                with self.hub.lock:
                    size = self.hub.lfs_objects.get(oid)
                if size is None:
                    self._error(422, f"LFS object {oid} was not uploaded")
                    return
                tree[value["path"]] = StoredFile(oid, size, True)
                changed.append(value["path"])
            elif key == "deletedFile":
                tree.pop(value["path"], None)
                changed.append(value["path"])
            else:
                self._error(400, f"unknown commit line {key!r}")
                return
        if not message:
            self._error(400, "a commit needs a summary")
            return
        oid = secrets.token_hex(20)
        with self.hub.lock:
            found.commits.append(Commit(oid, message, tree, tuple(changed)))
        self._send(
            200,
            {
                "success": True,
                "commitOid": oid,
                "commitUrl": f"{self.hub.url}/{repo}/commit/{oid}",
                "hookOutput": "",
            },
        )

    # -- downloads ----------------------------------------------------------

    def _repo_for_read(self, repo_id: str) -> Repo | None:
        """The repo when it exists and the token (or no token, for a public one) may read
        it; else the error is sent and None."""
        owner = self._auth()
        if owner is False:
            return None
        with self.hub.lock:
            found = self.hub.repos.get(repo_id)
        ns = repo_id.split("/")[0]
        if found is None or (
            found.private and not (owner and (ns == owner.user or ns in owner.orgs))
        ):
            self._error(404, "Repository not found", "RepoNotFound")
            return None
        return found

    def _files_at(self, repo: str, rev: str) -> tuple[str, dict[str, StoredFile]] | None:
        """(commit oid, tree) of `rev` ("main" or a commit oid) in a repo the caller may
        read; None after the error answer (401, 404)."""
        found = self._repo_for_read(repo)
        if found is None:
            return None
        with self.hub.lock:
            commits = list(found.commits)
        if rev == "main":
            if not commits:
                self._error(404, "Revision Not Found", "RevisionNotFound")
                return None
            return commits[-1].oid, dict(commits[-1].files)
        for commit in commits:
            if commit.oid == rev:
                return commit.oid, dict(commit.files)
        self._error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        return None

    @staticmethod
    def _entry(path: str, stored: StoredFile) -> dict:
        if not stored.lfs:
            return {
                "type": "file",
                "oid": git_blob_sha1(stored.content or b""),
                "size": stored.size,
                "path": path,
            }
        pointer = _lfs_pointer(stored.sha256, stored.size)
        return {
            "type": "file",
            "oid": git_blob_sha1(pointer),
            "size": stored.size,
            "path": path,
            "lfs": {"oid": stored.sha256, "size": stored.size, "pointerSize": len(pointer)},
        }

    @staticmethod
    def _folder(path: str) -> dict:
        return {"type": "directory", "oid": git_blob_sha1(path.encode()), "size": 0, "path": path}

    def _read_failure(self) -> bool:
        """Answer the next queued read failure, if any (then True)."""
        with self.hub.lock:
            status = self.hub._read_failures.pop(0) if self.hub._read_failures else None
        if status is None:
            return False
        self._error(status, "Internal Error - We're working hard to fix this")
        return True

    def _tree(self, repo, rev, path, query) -> None:
        if self._read_failure():
            return
        at = self._files_at(repo, rev)
        if at is None:
            return
        _commit, files = at
        base = (path or "").strip("/")
        prefix = base + "/" if base else ""
        recursive = (query.get("recursive") or ["False"])[0].lower() == "true"
        entries, folders = [], set()
        for file_path in sorted(files):
            if not file_path.startswith(prefix):
                continue
            rest = file_path[len(prefix) :].split("/")
            for depth in range(1, len(rest)):
                if depth > 1 and not recursive:
                    break
                folders.add(prefix + "/".join(rest[:depth]))
            if len(rest) == 1 or recursive:
                entries.append(self._entry(file_path, files[file_path]))
        if base and not entries and not folders:
            self._error(404, f"{base} does not exist on {rev}", "EntryNotFound")
            return
        body = [self._folder(f) for f in sorted(folders)] + entries
        headers = {}
        if self.hub.endless_listing:
            cursor = int((query.get("cursor") or ["0"])[0]) + 1
            where = f"{rev}/{base}" if base else rev
            next_url = f"{self.hub.url}/api/models/{repo}/tree/{where}?cursor={cursor}"
            headers["Link"] = f'<{next_url}>; rel="next"'
        if self.hub.drip_listing_s:
            self._drip(json.dumps(body).encode(), headers)
            return
        self._send(200, body, headers)

    def _drip(self, data: bytes, headers: dict[str, str]) -> None:
        """200 with `data` sent 16 bytes at a time, drip_listing_s apart."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            for i in range(0, len(data), 16):
                if self.hub._stopping.is_set():
                    break
                self.wfile.write(data[i : i + 16])
                self.wfile.flush()
                self.hub.stall(self.hub.drip_listing_s)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _paths_info(self, repo, rev, query) -> None:
        form = parse_qs(self._body().decode())
        if self._read_failure():
            return
        at = self._files_at(repo, rev)
        if at is None:
            return
        _commit, files = at
        out = []
        for path in form.get("paths", []):
            path = path.strip("/")
            if path in files:
                out.append(self._entry(path, files[path]))
            elif any(f.startswith(path + "/") for f in files):
                out.append(self._folder(path))
        self._send(200, out)

    def _resolve(self, repo, rev, path, query) -> None:
        at = self._files_at(repo, rev)
        if at is None:
            return
        commit, files = at
        stored = files.get(path)
        if stored is None:
            self._error(404, "Entry not found", "EntryNotFound")
            return
        head = self.command == "HEAD"
        if stored.lfs:
            location = f"{self.hub.cdn_url}/cdn/{stored.sha256}/{path}?sig={self.hub._sig}"
            self._send_bytes(
                302,
                b"",
                {
                    "Location": location,
                    "X-Repo-Commit": commit,
                    "X-Linked-Etag": f'"{stored.sha256}"',
                    "X-Linked-Size": str(stored.size),
                    "ETag": f'"{git_blob_sha1(_lfs_pointer(stored.sha256, stored.size))}"',
                },
                head=head,
            )
            return
        self._serve(
            path,
            stored.content or b"",
            {"X-Repo-Commit": commit, "ETag": f'"{git_blob_sha1(stored.content or b"")}"'},
            head=head,
        )

    def _cdn(self, oid, path, query) -> None:
        with self.hub.lock:
            self.hub.cdn_auth_headers.append(self.headers.get("Authorization"))
        if query.get("sig") != [self.hub._sig]:
            self._error(403, "bad signature")
            return
        try:
            with open(self.hub.object_path(oid), "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            self._error(404, "no such object")
            return
        self._serve(path, data, {"ETag": f'"{oid}"'}, head=self.command == "HEAD")

    def _serve(self, path: str, data: bytes, headers: dict[str, str], head: bool) -> None:
        """The file's bytes, unless a fault was asked for this path (not on HEAD)."""
        how = None if head else self.hub._take_fault(path)
        if self.hub.stall_download_s and not head:
            self.close_connection = True
            self.hub.stall(self.hub.stall_download_s)
            return
        if how == "flip":
            at = len(data) // 2
            data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :] if data else b"x"
        elif how == "extra":
            data = data + b"\0"
        elif how == "cut":
            self.close_connection = True
            try:
                self.send_response(200)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        self._send_bytes(200, data, headers, head=head)

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str], head: bool) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            if not head:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def _lfs_pointer(sha256: str, size: int) -> bytes:
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n"
    ).encode()
