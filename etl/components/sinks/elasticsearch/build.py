"""elasticsearch sink (Elasticsearch or OpenSearch): `_bulk` index requests with deterministic ids.

* Document id: with one `id_fields` column, its value as text; with several,
  the SHA-256 of their JSON; without `id_fields`, the SHA-256 of the whole
  row's JSON (so identical rows are one document). A replayed batch indexes
  the same ids again: documents are overwritten, never doubled.
* Per document: 429 and 5xx items are sent again with backoff (`retry`);
  any other rejection (a mapping error, 4xx) sends the document to the
  pipeline's dead letters with the reason, once per batch.
* Whole request: connection refused/reset, timeouts, 429 and 5xx are
  transient (retried by the sink's retry policy, on the next host when
  several are given); 401/403 and other 4xx answers are terminal.
* Rows are rendered to JSON in the JVM (to_json): timestamps as ISO 8601 UTC.
  Plain HTTP(S) with the standard library; `username`/`password` use basic auth.
* HTTPS: `ca_file` (PEM CA of the server's certificate; the system CAs
  without it), `cert_file`/`key_file` (client certificate), `verify: false`
  to trust any certificate. A failed handshake is terminal, never retried.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pyarrow as pa

from etl.connectors.server import ServerSink
from etl.runtime.sink import AbstractSink, SinkContext, SinkFailed, TerminalError, TransientError

REQUEST_TIMEOUT = 60.0
RETRY_ITEM = frozenset({429, 500, 502, 503, 504})


def https_context(spec: Any, resolve: Any) -> ssl.SSLContext:
    """The HTTPS client side of the sink: `ca_file` (else the system CAs), `cert_file`/`key_file`, `verify`."""
    try:
        ctx = ssl.create_default_context(cafile=resolve(spec.ca_file) if spec.ca_file else None)
        if not spec.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if spec.cert_file is not None:
            ctx.load_cert_chain(resolve(spec.cert_file), resolve(spec.key_file))
    except (OSError, ssl.SSLError) as e:
        raise TerminalError(f"cannot load the TLS files (ca_file, cert_file, key_file): {e}") from None
    return ctx


class ElasticsearchSink(ServerSink):
    def __init__(self, spec: Any, ctx: SinkContext):
        super().__init__(spec, ctx)
        self.hosts = [h.rstrip("/") for h in spec.hosts]
        self._host = 0
        self.headers = {"Content-Type": "application/x-ndjson"}
        if spec.username is not None:
            token = base64.b64encode(f"{spec.username}:{spec.password or ''}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"
        self.item_retries = 0
        self.rejected = 0
        self.tls = https_context(spec, ctx.resolve) if any(h.startswith("https:") for h in self.hosts) else None

    # replay protection: deterministic ids make a replay harmless; the local marker only saves the work
    def committed(self, batch_id: int) -> bool:
        return AbstractSink.is_committed(self, batch_id)

    def mark_committed(self, batch_id: int) -> None:
        super().mark_committed(batch_id)
        AbstractSink.mark_committed(self, batch_id)

    # -------------------------------------------------------------- shaping
    def prepare_columns(self, df: Any) -> list[Any]:
        from pyspark.sql import functions as F

        doc = F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns]))
        fields = list(self.spec.id_fields)
        missing = [f for f in fields if f not in df.columns]
        if missing:
            raise SinkFailed(f"{self.label}: id_fields {', '.join(missing)} are not among the columns "
                             f"({', '.join(df.columns)})")
        by_row = F.sha2(doc, 256)
        if len(fields) == 1:
            doc_id = F.coalesce(F.col(f"`{fields[0]}`").cast("string"), by_row)
        elif fields:
            doc_id = F.sha2(F.to_json(F.struct(*[F.col(f"`{c}`") for c in fields])), 256)
        else:
            doc_id = by_row
        return [doc_id.alias("_id"), doc.alias("_doc")]

    # ----------------------------------------------------------------- http
    def _request(self, body: bytes) -> dict:
        """POST /<index>/_bulk on the current host (the next ones on connection errors)."""
        last: Exception | None = None
        for _ in range(len(self.hosts)):
            host = self.hosts[self._host]
            req = urllib.request.Request(f"{host}/{urllib.parse.quote(self.spec.index, safe='')}/_bulk", data=body,
                                         method="POST",
                                         headers=self.headers)
            try:
                with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT, context=self.tls) as resp:
                    return json.loads(resp.read())
            except urllib.error.HTTPError as e:
                text = e.read().decode("utf-8", "replace")[:500]
                msg = f"{host} answered HTTP {e.code} to _bulk: {text}"
                if e.code in (401, 403):
                    raise TerminalError(f"{msg}; check username and password") from None
                if e.code == 429 or e.code >= 500:
                    raise TransientError(msg) from None
                raise TerminalError(msg) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                reason = getattr(e, "reason", e)
                if isinstance(reason, ssl.SSLError):  # a certificate that does not verify will not verify later
                    raise TerminalError(f"TLS handshake with {host} failed: "
                                        f"{getattr(reason, 'verify_message', None) or reason.reason or reason}; "
                                        "check ca_file (the CA that signed the server's certificate), "
                                        "cert_file and key_file") from None
                last = TransientError(f"cannot reach {host}: {reason}")
                self._host = (self._host + 1) % len(self.hosts)
            except ValueError as e:  # not JSON, or a malformed URL
                raise TerminalError(f"{host}: unexpected answer to _bulk ({e})") from None
        assert last is not None
        raise last

    # ---------------------------------------------------------------- batch
    def begin(self, batch_id: int, schema: pa.Schema) -> None:
        self.rejects.clear()

    def batch_insert(self, rows: pa.Table) -> None:
        ids = rows.column(0).to_pylist()
        docs = rows.column(1).to_pylist()
        index = json.dumps(self.spec.index)
        pending = list(range(len(ids)))
        bad: list[tuple[str, str]] = []  # kept only once the chunk is done (a retried chunk rejects again)
        r = self.spec.retry
        delay = float(r.initial_backoff)
        for attempt in range(1, r.max_attempts + 1):
            body = "".join(f'{{"index":{{"_index":{index},"_id":{json.dumps(ids[i])}}}}}\n{docs[i]}\n'
                           for i in pending).encode()
            answer = self._request(body)
            if not answer.get("errors"):
                break
            again = []
            for i, item in zip(pending, answer.get("items", []), strict=False):
                res: dict = next(iter(item.values()), {})
                status = int(res.get("status", 500))
                if status < 300:
                    continue
                if status in RETRY_ITEM:
                    again.append(i)
                else:
                    err = res.get("error") or {}
                    reason = err.get("reason", str(err)) if isinstance(err, dict) else str(err)
                    kind = err.get("type", "error") if isinstance(err, dict) else "error"
                    cause = err.get("caused_by", {}).get("reason") if isinstance(err, dict) else None
                    bad.append((f"{self.spec.type} rejected the document (HTTP {status}) {kind}: {reason}"
                                + (f" ({cause})" if cause else ""), docs[i]))
            if not again:
                break
            pending = again
            if attempt == r.max_attempts:
                raise TransientError(f"{len(pending)} documents still refused with 429/5xx after "
                                     f"{r.max_attempts} attempts")
            self.item_retries += 1
            self.ctx.sleep(delay)
            delay = min(delay * 2, float(r.max_backoff))
        for reason, payload in bad:
            self.rejects.add(reason, payload)
        self.rejected += len(bad)

    def commit(self, batch_id: int) -> None:
        self.rejects.flush(batch_id)

    def abort(self, batch_id: int) -> None:
        self.rejects.clear()

    def close(self) -> None:
        self.rejects.close()
