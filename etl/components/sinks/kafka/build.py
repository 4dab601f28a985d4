"""kafka sink: each micro-batch written exactly once, with one Kafka transaction (confluent-kafka).

Exactly once (`delivery: exactly_once`, the default):

* one transactional producer per (pipeline, sink): `transactional.id` is
  `etl.<pipeline>.<sink>`, stable across restarts, so a restarted run fences a
  zombie and aborts whatever transaction the crashed run left open;
* a micro-batch is one transaction, and that transaction also writes a
  commit marker record -- key `<pipeline>/<sink>/<query>/<checkpoint id>`,
  value `{"batch": id, "rows": n}` -- to the compacted one-partition topic
  `_etl_commits.<topic>` (created on first use). Rows and marker become
  visible together or not at all;
* replay protection: when Spark replays a batch (crash between the sink's
  commit and Spark's commit log), `is_committed` -- after `init_transactions`
  resolved any transaction the crashed run left open -- reads the marker topic
  once (read_committed, up to its high watermark) for the last committed batch
  id of this sink and skips every batch id up to it; later batches are tracked
  in memory: a worker keeps the sink between micro-batches
  (etl.runtime.partitions.LIVE), so a partition's next batch on the same worker
  costs one transaction, without a new producer or a marker read. What it knows
  holds for its producer's epoch only: another writer of the partition (Spark
  ran it on another worker) initialises the same transactional.id and fences
  this producer, whose next transaction then fails; a producer dropped for any
  reason forgets the last batch, and a transaction begun on a new producer
  reads the markers again before it commits (aborted when the batch is there).
  A kept sink given a batch later than the one after the last it handled (the
  partition went to another worker meanwhile, whose producer fenced this one)
  makes its producer anew before writing, instead of failing a fenced
  transaction first (`committed`; a fenced producer's failure: `_lost`);
* readers must use `isolation.level=read_committed` (etl's kafka source does).

(Markers are records rather than `send_offsets_to_transaction` offsets: with
librdkafka 2.x that call blocked forever after a broker restart in our outage
tests, whatever its timeout.)

A broken transaction (abortable error, fenced or fatal producer) is aborted
and the whole batch is produced again in a new one: the batch's rows are kept
until it commits. `delivery: at_least_once`: an idempotent producer without
transactions; a replayed batch may be written again.

Connection: `security` (SASL / TLS, the same block as the kafka source's) and
`options` (librdkafka names; the Java names `sasl.jaas.config`,
`sasl.mechanism` and a PEM trust store are translated), see
etl.connectors.kafka_security. A refused login or TLS handshake is terminal.

Rows travel as: key = the `key` expression (string), value = the row as JSON
(rendered in the JVM by to_json), headers = `headers` expressions (strings).

A message larger than the topic accepts (`max.message.bytes` of the topic, read
at start; the producer's `message.max.bytes` when smaller) is refused by the
producer itself: it goes to the pipeline's dead letters (stage = the sink's id,
reason `kafka MSG_SIZE_TOO_LARGE: ...`, payload = the value) and the batch's
other messages commit in its transaction. When the broker refuses messages the
producer let through (the topic's limit could not be read), the transaction is
aborted and the batch produced again one message per record batch (a refused
batch may hold small messages too), then without the refused ones.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import Any, NoReturn

import pyarrow as pa

from etl.components.sinks.kafka.limits import DEFAULT_MAX_MESSAGE, as_bytes, topic_max_message, without
from etl.connectors.server import ServerSink, run_tag
from etl.components.sources.kafka.build import check_reachable, client_conf
from etl.runtime.sink import AbstractSink, SinkContext, TerminalError, TransientError, WriteResult

log = logging.getLogger("etl.sink.kafka")
OP_TIMEOUT = 20.0  # seconds per init/commit/abort call; the sink's retry policy repeats them


class _ClientLog:
    """librdkafka's own log (connection refused while a broker restarts, ...) at debug level:
    the sink reports what matters through its retries and errors."""

    def log(self, level: int, fmt: str, *args: Any) -> None:
        log.debug(fmt, *args)


_client_log = _ClientLog()


def _client_conf(spec: Any, base_dir: str | None = None) -> dict[str, Any]:
    """librdkafka settings: `security` plus `options` (librdkafka names; Java SASL/TLS names translated).

    `enable.sparse.connections` is off unless `options` set it: a new client connects at once to the brokers the
    bootstrap's metadata names. With sparse connections (librdkafka's default) a new producer's search for its
    transaction coordinator found no broker connected (the bootstrap connection is closed once the brokers are
    known) and waited for librdkafka's 500 ms coordinator timer: `init_transactions` of a partition's new producer
    took 505-591 ms in 15 of 34 tries, 18-89 ms in the others (two producers of two transactional ids made anew at
    once, one broker); 6-44 ms without."""
    conf, _ = client_conf(spec, base_dir, producer=True)
    conf.setdefault("enable.sparse.connections", False)
    return {**conf, "bootstrap.servers": spec.bootstrap_servers, "logger": _client_log}


def _need_client() -> Any:
    try:
        import confluent_kafka
    except ImportError as e:
        raise TerminalError("the kafka sink needs the confluent-kafka package: pip install confluent-kafka") from e
    return confluent_kafka


class KafkaSink(ServerSink):
    live = True  # kept by its worker between micro-batches (etl.runtime.partitions.LIVE)

    def __init__(self, spec: Any, ctx: SinkContext):
        super().__init__(spec, ctx)
        self.ck = _need_client()
        self.exactly_once = spec.delivery == "exactly_once"
        # one producer per (sink, partition) on the executors: a replayed partition's producer fences the last one
        self.transactional_id = f"etl.{ctx.pipeline}.{ctx.sink_id}" + (
            f".p{ctx.partition}" if ctx.partition is not None else "")
        self.producer: Any = None
        self._fenced = False  # the driver's transactional.id was initialised (recover)
        self._reached = False  # a producer was made: the broker answered, the topic's limit is known (_topic_max)
        self._topic_max: int | None = None
        self._read: tuple[int, int] = (0, -1)  # the marker topic read up to: (offset, last batch id found below it)
        self._key: bytes | None = None
        self._topic_ready = False
        self._last: int | None = None  # last committed batch id (None: read the marker topic)
        self._seen: int | None = None  # last batch id this instance was given (checked or written)
        self._chunks: list[tuple[list, list, list | None]] = []
        self._errors: list[Any] = []
        self._too_large: list[tuple[bytes, Any]] = []  # (value, error) of messages the broker refused as too large
        self._in_txn = False
        self._marker_sent = False
        self._headers: list[str] = list(spec.headers)
        self._limit = DEFAULT_MAX_MESSAGE  # bytes per message the producer accepts
        self._one_per_batch = False  # finding which messages the broker refuses: one message per record batch
        self._limit_known = False  # the topic's max.message.bytes was read (the producer refuses larger messages)
        self._shape: tuple[tuple[str, ...], list[Any]] | None = None  # the driver's prepare_columns, by column names

    # ------------------------------------------------------------- clients
    def _err(self, what: str, e: Exception) -> Exception:
        """TerminalError for authorization/configuration problems, TransientError otherwise."""
        err: Any = e.args[0] if e.args else None  # confluent_kafka's KafkaError
        text = err.str() if hasattr(err, "str") else str(e)
        msg = f"{what} (Kafka at {self.spec.bootstrap_servers}): {text}"
        KE = self.ck.KafkaError
        terminal = {KE.TOPIC_AUTHORIZATION_FAILED, KE.CLUSTER_AUTHORIZATION_FAILED, KE.GROUP_AUTHORIZATION_FAILED,
                    KE.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, KE.SASL_AUTHENTICATION_FAILED,
                    KE._AUTHENTICATION, KE._INVALID_ARG, KE.MSG_SIZE_TOO_LARGE}
        if hasattr(err, "code") and err.code() in terminal:
            return TerminalError(msg)
        return TransientError(msg)

    def _conf(self) -> dict[str, Any]:
        return _client_conf(self.spec, self.ctx.base_dir)

    def _make_producer(self) -> None:
        conf = self._conf()
        if not self._reached:  # a first producer, or one after an error (not a partition's move: committed)
            bad = check_reachable(self.spec.bootstrap_servers, timeout=5.0, conf=conf)
            if bad is not None and bad.auth:
                raise TerminalError(f"Kafka at {self.spec.bootstrap_servers} refused the connection: {bad.reason}; "
                                    "check security (protocol, sasl_mechanism, username, password, ca_file)")
            if bad is not None:
                raise TransientError(f"cannot reach Kafka at {self.spec.bootstrap_servers}: {bad.reason}")
            self._topic_max = self._topic_max_message()
        conf.update({"enable.idempotence": True, "linger.ms": 5, "compression.type": "lz4"})
        topic_max = self._topic_max
        if topic_max is not None:  # larger messages are refused by the producer, one by one (dead letters)
            conf["message.max.bytes"] = max(1000, min(int(conf.get("message.max.bytes", DEFAULT_MAX_MESSAGE)),
                                                      topic_max))
        self._limit = int(conf.get("message.max.bytes", DEFAULT_MAX_MESSAGE))
        self._limit_known = topic_max is not None
        if self._one_per_batch:
            conf["batch.num.messages"] = 1
        if self.exactly_once:
            conf.setdefault("transactional.id", self.transactional_id)
            conf.setdefault("transaction.timeout.ms", 300_000)
        try:
            p = self.ck.Producer(conf)
        except self.ck.KafkaException as e:
            raise TerminalError(f"invalid kafka producer settings: {e}") from e
        if self.exactly_once:
            try:
                p.init_transactions(OP_TIMEOUT)
            except self.ck.KafkaException as e:
                self._reached = False  # the next producer is checked first (an unreachable broker fails in 5 s)
                raise self._err("cannot initialise the transactional producer", e) from e
            except SystemError as e:  # see _lost
                self._lost(e)
        self.producer = p
        self._reached = True

    def _topic_max_message(self) -> int | None:
        return topic_max_message(_client_conf(self.spec), self.spec.topic, OP_TIMEOUT)

    def _producer(self) -> Any:
        if self.producer is None:
            self._make_producer()
        return self.producer

    @property
    def marker_topic(self) -> str:
        return f"_etl_commits.{self.spec.topic}"[:249]

    def _marker_key(self) -> bytes:
        if self._key is None:  # read once the query started (its checkpoint holds the id)
            self._key = f"{self.ctx.pipeline}/{self.ctx.sink_id}/{self.ctx.scope}/{run_tag(self.ctx)}".encode()
        return self._key

    def _ensure_marker_topic(self) -> None:
        if self._topic_ready:
            return
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({**self._conf(), "log_level": 0})
        topic = NewTopic(self.marker_topic, num_partitions=1, replication_factor=-1,
                         config={"cleanup.policy": "compact", "segment.bytes": str(8 * 1024 * 1024)})
        try:
            admin.create_topics([topic], operation_timeout=OP_TIMEOUT)[self.marker_topic].result(OP_TIMEOUT)
        except self.ck.KafkaException as e:
            err = e.args[0] if e.args else None
            if getattr(err, "code", lambda: None)() != self.ck.KafkaError.TOPIC_ALREADY_EXISTS:
                if isinstance(self._err("", e), TerminalError):
                    log.warning("%s: cannot create %s (%s); it is created on first write with the broker's "
                                "defaults", self.label, self.marker_topic, e)
                else:
                    raise self._err(f"cannot create the marker topic {self.marker_topic}", e) from e
        except TimeoutError as e:  # the call's future had no answer in time (the broker is down): retried
            raise TransientError(f"cannot create the marker topic {self.marker_topic}: no answer from "
                                 f"{self.spec.bootstrap_servers} within {OP_TIMEOUT:.0f}s") from e
        self._topic_ready = True

    def _scan_markers(self) -> int:
        """The last committed batch id of this sink in the marker topic (-1: none).

        Read on from where this instance's last scan ended (`_read`: offset reached, last batch id found): below
        that offset every record of a read_committed read was delivered then (it stops at the last stable offset)
        and markers are never rewritten, so a moved partition's scan reads the markers written since, not the whole
        topic (its active segment, not compacted, holds every marker of its up to 8 MB: a whole read of 50,000
        markers took 145 ms, one with nothing new 5 ms). A read_committed consumer's high watermark is the last
        stable offset: another writer's open transaction does not hold the scan."""
        self._ensure_marker_topic()
        conf = self._conf()
        conf.update({"group.id": f"etl-marker-scan.{self.transactional_id}", "enable.auto.commit": False,
                     "isolation.level": "read_committed", "enable.partition.eof": True,
                     "auto.offset.reset": "earliest",
                     # the scan reads to the end of a small topic: a fetch with nothing left must not wait out the
                     # default 500 ms for more, nor `consume` its whole timeout for a full batch (one scan took
                     # ~1,010 ms; polled with a 10 ms fetch wait, 20-90 ms)
                     "fetch.wait.max.ms": 10})
        c = self.ck.Consumer(conf)
        key = self._marker_key()
        try:
            tp = self.ck.TopicPartition(self.marker_topic, 0)
            low, high = c.get_watermark_offsets(tp, timeout=OP_TIMEOUT)
            start, last = self._read
            if high < start:  # the topic was made anew: read it whole
                start, last = 0, -1
            start = max(start, low)
            if high <= start:
                return last
            c.assign([self.ck.TopicPartition(self.marker_topic, 0, start)])
            deadline = time.monotonic() + OP_TIMEOUT
            while time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error() is not None:
                    if m.error().code() == self.ck.KafkaError._PARTITION_EOF and m.offset() >= high:
                        self._read = (m.offset(), last)
                        return last
                    if m.error().code() != self.ck.KafkaError._PARTITION_EOF:
                        raise self.ck.KafkaException(m.error())
                elif m.key() == key:
                    last = max(last, int(json.loads(m.value())["batch"]))
            raise TransientError(f"reading {self.marker_topic} did not reach its end within {OP_TIMEOUT:.0f}s "
                                 "(a transaction of another writer still open?)")
        except self.ck.KafkaException as e:
            raise self._err(f"cannot read the commit markers in {self.marker_topic}", e) from e
        finally:
            c.close()

    def _drop_producer(self, moved: bool = False) -> None:
        """moved: the partition was written on another worker meanwhile (committed), nothing failed here: the
        next producer is made without the reachability check and the topic's limit read again."""
        p, self.producer = self.producer, None
        self._in_txn = False
        self._last = None  # known for this producer's epoch only: a writer that fenced it may have committed since
        self._reached = self._reached and moved
        if p is not None:
            with contextlib.suppress(Exception):  # a broken producer is thrown away
                p.flush(0)

    def _lost(self, e: SystemError) -> NoReturn:
        """A producer call raised SystemError: the producer failed with a fatal error (fenced by a newer producer
        of its transactional.id: the partition was written on another worker meanwhile) and confluent-kafka lost
        the error in a callback. Its C error callback (error_cb in confluent_kafka.c, 2.15 source; the 2.16.1
        installed here does the same) raises a fatal error with `cfl_PyErr_Fatal(...); goto crash;`, past
        `CallState_fetch_exception`: the KafkaException stays pending on the thread while the same flush / poll /
        commit_transaction goes on serving callbacks, and the next Python one (the failed messages' delivery
        reports, the logger) "returned a result with an exception set" (SystemError from the fatal
        KafkaException), or clears it ("returned NULL without setting an exception"). Reproduced with a broker,
        without Spark: tests/unit/test_live_sinks.py::test_kafka_kept_producer_fenced_by_another_worker_*. The
        producer is dead either way: dropped, and the batch is produced again on a new one (retried as
        transient), whose transaction reads the markers before it commits."""
        self._drop_producer()
        cause = e.__cause__ if isinstance(e.__cause__, self.ck.KafkaException) else None
        if cause is None:
            raise TransientError(f"the kafka producer failed ({e}); the batch is produced again on a new one") from e
        raise self._err("the kafka producer failed (its error lost in a confluent-kafka callback); the batch is "
                        "produced again on a new one", cause) from e

    # ---------------------------------------------------- replay protection
    def committed(self, batch_id: int) -> bool:
        if not self.exactly_once:
            return AbstractSink.is_committed(self, batch_id)
        if self._last is not None and self._seen is not None and batch_id > max(self._seen + 1, self._last):
            # kept, and batches of this partition went to another worker since its last one: that worker's producer
            # fenced this one; a new producer fences it in turn, and the markers tell what it committed
            self._drop_producer(moved=True)
        self._seen = batch_id
        if self._last is None:
            self._producer()  # init_transactions first: a crashed run's open transaction is resolved
            self._last = self._scan_markers()
        return batch_id <= self._last

    def recover(self, batch_id: int) -> bool:
        """On the driver, before the first batch written from the executors: a transaction left open under the
        driver's own transactional.id (a run that wrote from the driver and died) is aborted now, by initialising
        that id once; until then it would hold back every read_committed consumer of the topic."""
        if self.exactly_once and not self._fenced:
            self._retry("fencing of an earlier producer", self._producer, WriteResult())
            self._drop_producer()
            self._fenced = True
        return False

    def mark_committed(self, batch_id: int) -> None:
        super().mark_committed(batch_id)
        if not self.exactly_once:
            AbstractSink.mark_committed(self, batch_id)

    # ------------------------------------------------------------- shaping
    def prepare_columns(self, df: Any) -> list[Any]:
        """key, value (the row as JSON), headers: unresolved columns, built once per list of column names (about a
        dozen py4j round trips on the driver each batch otherwise) and reused for every batch's frame."""
        from pyspark.sql import functions as F

        names = tuple(df.columns)
        if self._shape is not None and self._shape[0] == names:
            return list(self._shape[1])
        key = F.expr(self.spec.key).cast("string") if self.spec.key else F.lit(None).cast("string")
        value = F.to_json(F.struct(*[F.col(f"`{c}`") for c in names]))
        heads = [F.expr(e).cast("string").alias(f"_h{i}") for i, e in enumerate(self.spec.headers.values())]
        cols = [key.alias("key"), value.alias("value"), *heads]
        self._shape = (names, cols)
        return list(cols)

    # --------------------------------------------------------------- batch
    def begin(self, batch_id: int, schema: pa.Schema) -> None:
        self._chunks = []
        self.rejects.clear()
        self._start()

    def _start(self) -> None:
        p = self._producer()
        self._errors = []
        self._too_large = []
        if self.exactly_once and not self._in_txn:
            try:
                p.begin_transaction()
            except self.ck.KafkaException as e:
                self._drop_producer()
                raise self._err("cannot begin a transaction", e) from e
            self._in_txn = True
            self._marker_sent = False

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None and err.code() == self.ck.KafkaError.MSG_SIZE_TOO_LARGE:
            self._too_large.append((msg.value() or b"", err))
        elif err is not None:
            self._errors.append(err)

    def _produce(self, keys: list, values: list, headers: list | None) -> tuple[list, list, list | None]:
        """Produce one chunk; returns the chunk without the messages the producer refused as too large
        (they are added to this batch's dead letters)."""
        p = self.producer
        topic = self.spec.topic
        cb = self._on_delivery
        names = self._headers
        too_large = self.ck.KafkaError.MSG_SIZE_TOO_LARGE
        refused: list[int] = []
        reasons: list[tuple[str, str]] = []  # kept only once the chunk is done (a retried chunk refuses again)
        for i, (k, v) in enumerate(zip(keys, values, strict=True)):
            h = [(n, hv[i]) for n, hv in zip(names, headers, strict=True) if hv[i] is not None] if headers else None
            while True:
                try:
                    p.produce(topic, value=v, key=k, headers=h, on_delivery=cb)
                    break
                except BufferError:  # local queue full: let librdkafka send
                    p.poll(0.05)
                except self.ck.KafkaException as e:
                    err: Any = e.args[0] if e.args else None
                    if getattr(err, "code", lambda: None)() != too_large:
                        raise
                    refused.append(i)
                    size = len(v.encode() if isinstance(v, str) else v or b"")
                    reasons.append((f"kafka {err.name()}: {err.str()} (a value of {size} bytes; at most "
                                    f"{self._limit} bytes per message)", v or ""))
                    break
        p.poll(0)
        for reason, payload in reasons:
            self.rejects.add(reason, payload)
        return without((keys, values, headers), set(refused))

    def _refused_by_broker(self) -> None:
        """Messages the broker refused as too large (the producer let them through: a record batch's overhead,
        a topic whose limit could not be read) go to dead letters; a transaction is produced again without them."""
        if not self._too_large:
            return
        refused, self._too_large = self._too_large, []
        if not self._one_per_batch:  # a refused record batch may hold small messages too: which ones are too large?
            self._one_per_batch = True
            self._abort_or_drop()
            self._drop_producer()
            raise TransientError(f"the broker refused {len(refused)} messages as too large; the batch is produced "
                                 "again one message per record batch, to find which")
        sizes = {v: len(v) for v, _ in refused}
        for value, err in refused:
            self.rejects.add(f"kafka {err.name()}: {err.str()} (a value of {sizes[value]} bytes, refused by the "
                             "broker)", value.decode("utf-8", "replace"))
        self._chunks = [without(c, {i for i, v in enumerate(c[1]) if as_bytes(v) in sizes}) for c in self._chunks]
        if not self.exactly_once:
            return  # the other messages are delivered
        self._abort_or_drop()
        raise TransientError(f"{len(refused)} messages refused by the broker as too large go to dead letters; "
                             "the batch's other messages are produced again")

    def batch_insert(self, rows: pa.Table) -> None:
        keys = rows.column(0).to_pylist()
        values = rows.column(1).to_pylist()
        headers = [rows.column(2 + i).to_pylist() for i in range(len(self._headers))] or None
        if self.producer is None or (self.exactly_once and not self._in_txn):
            self._redo()  # a broken transaction: start over with the rows kept so far
        try:
            kept = self._produce(keys, values, headers)
        except self.ck.KafkaException as e:
            if isinstance(self._err("", e), TerminalError):
                raise self._err("cannot produce", e) from e
            self._broken(e)
        except SystemError as e:  # see _lost
            self._lost(e)
        self._chunks.append(kept)

    def _abort_or_drop(self) -> None:
        if self.exactly_once and self._in_txn and self.producer is not None:
            try:
                self.producer.abort_transaction(OP_TIMEOUT)
                self._in_txn = False
            except (self.ck.KafkaException, SystemError):  # SystemError: see _lost
                self._drop_producer()

    def _redo(self) -> None:
        self._start()
        self._chunks = [self._produce(*chunk) for chunk in self._chunks]

    def _broken(self, e: Exception) -> None:
        """The transaction cannot commit: abort it (or drop the producer) and let the retry start over."""
        err = e.args[0] if e.args else None
        if err is not None and hasattr(err, "fatal") and err.fatal():
            self._drop_producer()
        else:
            self._abort_or_drop()
        raise self._err("the batch's transaction failed and is produced again", e) from e

    def commit(self, batch_id: int) -> None:
        try:
            self._commit(batch_id)
        except SystemError as e:  # see _lost
            self._lost(e)

    def _commit(self, batch_id: int) -> None:
        if self.producer is None or (self.exactly_once and not self._in_txn):
            if self.exactly_once and self.committed(batch_id):
                return  # the previous attempt did commit before the connection broke
            self._redo()
        p = self.producer
        left = 0
        if not self.exactly_once or not self._limit_known:
            # every delivery report now: which messages did the broker refuse? (with the topic's limit known the
            # producer refuses them itself, and a transaction's commit flushes: an outage then fails the commit
            # and is retried with the sink's backoff instead of waiting here)
            left = p.flush(OP_TIMEOUT)
        self._refused_by_broker()
        self.rejects.flush(batch_id)  # dead letters first: once per batch id, so a replay never doubles them
        if not self.exactly_once:
            if self._errors:  # failed deliveries: send the whole batch again (at least once)
                first = self._errors[0]
                self._redo()
                raise TransientError(f"messages not delivered to {self.spec.bootstrap_servers} "
                                     f"({first.str()}); the batch is sent again")
            if left:
                raise TransientError(f"{left} messages still waiting for {self.spec.bootstrap_servers}")
            self._chunks = []
            self._one_per_batch = False
            return
        if self._last is None and not self._marker_sent and self._committed_meanwhile(batch_id):
            return
        rows = sum(len(c[1]) for c in self._chunks)
        try:
            if not self._marker_sent:
                p.produce(self.marker_topic, key=self._marker_key(),
                          value=json.dumps({"batch": batch_id, "rows": rows}))
                self._marker_sent = True
            p.commit_transaction(OP_TIMEOUT)
        except self.ck.KafkaException as e:
            err = e.args[0] if e.args else None
            if err is not None and err.retriable() and not err.txn_requires_abort() and not err.fatal():
                # commit_transaction may be called again to resume
                raise self._err("commit of the batch's transaction (retrying)", e) from e
            self._last = None  # unknown whether it committed: read the markers again
            self._broken(e)
        self._in_txn = False
        self._chunks = []
        self._last = batch_id
        if self._one_per_batch:  # found: the next batch gets a producer that batches again
            self._one_per_batch = False
            self._drop_producer()

    def _committed_meanwhile(self, batch_id: int) -> bool:
        """The producer was made anew during this batch (the last one was fenced or broke): did another writer of
        this partition commit the batch meanwhile? Then this transaction is aborted instead of committed."""
        self._last = self._scan_markers()
        if batch_id > self._last:
            return False
        log.warning("%s: batch %d was committed by another writer of partition %s meanwhile; this attempt's "
                    "transaction is aborted", self.label, batch_id, self.ctx.partition)
        self._abort_or_drop()
        self._in_txn = False
        self._chunks = []
        return True

    def reusable(self) -> bool:
        return not self._in_txn

    def reuse(self, ctx: SinkContext) -> None:
        super().reuse(ctx)
        self._chunks, self._errors, self._too_large = [], [], []

    def abort(self, batch_id: int) -> None:
        self._chunks = []
        self.rejects.clear()
        self._abort_or_drop()

    def close(self) -> None:
        if self.producer is not None:
            try:
                if self._in_txn:
                    self.producer.abort_transaction(5)
                self.producer.flush(5)
            except Exception:  # noqa: BLE001 - closing
                pass
            self.producer = None
        self.rejects.close()
