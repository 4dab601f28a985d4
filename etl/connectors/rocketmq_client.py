"""A thin wrapper over the `rocketmq` 0.4.4 native client (librocketmq, remoting protocol).

What the RocketMQ source and sink need, and nothing else:

* `topic_queues(namesrv, topic)`: the readable message queues of a topic, asked of the
  name server over the remoting protocol (a few lines of Python). The native client
  cannot tell an unreachable name server from a missing topic (both give zero
  queues), so this is also where "name server not reachable" is detected.
* `PullConsumer.pull(topic, queue, offset, max_num, expr)`: messages of one queue from
  an offset, with the queue's bounds; `bounds()` for min/max offsets.
  `rocketmq.client.PullConsumer` keeps offsets in a class attribute shared by the
  whole process and walks every queue; we call the native `Pull` directly instead.
* `Producer.send(topic, body, keys, tags, properties)`: one synchronous send.

The native library is used through our own ctypes prototypes on a second handle of the
same shared object, so `rocketmq.ffi.dll` (used by the `rocketmq.client` classes) is
left untouched. Two things the bundled library gets wrong are worked around here:

* `GetMessageBody` returns a C string, which cuts binary bodies at the first NUL byte.
  The library is built with the pre-C++11 (copy-on-write) `std::string`: the length
  is stored 24 bytes before the characters. `_body()` reads it, checks it against the
  capacity and the terminating NUL, and falls back to the C string if they disagree.
* `SendBatchMessage` stores the whole batch as one empty message on a 5.x broker:
  messages are sent one by one (`Producer.send`; callers use a few threads).

Errors: `Unavailable` (name server or broker unreachable, timeouts: worth retrying),
`Rejected` (a message the broker will never take), `RocketMQError` for the rest.
Clients are cached per process (`shared_consumer`, `shared_producer`): the native
client allows one consumer and one producer per group and process.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import re
import socket
import struct
import threading
import time
import zlib
from ctypes import POINTER, Structure, byref, c_char, c_char_p, c_int, c_long, c_longlong, c_size_t, c_void_p
from dataclasses import dataclass, field
from typing import Any

from etl.settings import current

GET_ROUTEINFO_BY_TOPIC = 105
TOPIC_NOT_EXIST = 17
PERM_READ = 4
PULL_FOUND, PULL_NO_NEW_MSG, PULL_NO_MATCHED_MSG, PULL_OFFSET_ILLEGAL, PULL_BROKER_TIMEOUT = range(5)
STATUS_NAMES = {0: "FOUND", 1: "NO_NEW_MSG", 2: "NO_MATCHED_MSG", 3: "OFFSET_ILLEGAL", 4: "BROKER_TIMEOUT"}
SEND_OK = 0
NO_ROUTE_RETRIES = 5  # 10 ms .. 160 ms: a real outage still fails within ~0.3 s
LOG_LEVEL_WARN = 3


class RocketMQError(Exception):
    """A RocketMQ call failed."""


class Unavailable(RocketMQError):
    """The name server or broker cannot be reached (or timed out): worth retrying."""


class Rejected(RocketMQError):
    """The broker or the client refuses this message for good (empty, too large, bad topic)."""


# ------------------------------------------------------------------ addresses
def parse_namesrv(namesrv: str) -> list[tuple[str, int]]:
    """'host:port;host2:port2' -> [(host, port), ...]; ValueError on anything else."""
    out = []
    for part in re.split(r"[;,]", namesrv):
        part = part.strip()
        if not part:
            continue
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"invalid name server address {part!r}: expected host:port")
        out.append((host, int(port)))
    if not out:
        raise ValueError(f"invalid name server address {namesrv!r}: expected host:port")
    return out


# ------------------------------------------------------------------ remoting
def remoting_call(addr: tuple[str, int], code: int, ext_fields: dict[str, str] | None = None,
                  timeout: float = 5.0) -> tuple[dict, bytes]:
    """One request/response over RocketMQ remoting with a JSON header; (header, body).

    Frame: int32 total length | int32 (serialize type << 24 | header length) | header | body.
    """
    header = json.dumps({"code": code, "language": "PYTHON", "version": 0, "opaque": 1, "flag": 0,
                         "serializeTypeCurrentRPC": "JSON", "extFields": ext_fields or {}}).encode()
    frame = struct.pack(">II", 4 + len(header), len(header)) + header
    with socket.create_connection(addr, timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(frame)
        (length,) = struct.unpack(">I", _recv_exact(sock, 4))
        payload = _recv_exact(sock, length)
    (mark,) = struct.unpack(">I", payload[:4])
    header_len = mark & 0xFFFFFF
    if mark >> 24 != 0:
        raise RocketMQError(f"name server {addr[0]}:{addr[1]} answered in a serialization other than JSON")
    return json.loads(payload[4:4 + header_len]), payload[4 + header_len:]


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by peer")
        buf += chunk
    return bytes(buf)


_INT_KEY = re.compile(r'([{,])(-?\d+):')


def _lenient_json(body: bytes) -> Any:
    """fastjson writes integer map keys unquoted ({0:"host:port"}): quote them."""
    return json.loads(_INT_KEY.sub(r'\1"\2":', body.decode("utf-8")))


@dataclass(frozen=True, order=True)
class Queue:
    broker: str
    queue_id: int

    @property
    def key(self) -> str:
        """The queue's name in checkpointed offsets: 'broker/queue_id'."""
        return f"{self.broker}/{self.queue_id}"

    @classmethod
    def from_key(cls, key: str) -> Queue:
        broker, _, qid = key.rpartition("/")
        return cls(broker, int(qid))


def topic_queues(namesrv: str, topic: str, timeout: float = 5.0) -> list[Queue] | None:
    """Readable queues of `topic`, sorted; None when the name server has no route for it
    (the topic does not exist, or its brokers are down). Raises Unavailable when no name
    server answers."""
    errors = []
    for addr in parse_namesrv(namesrv):
        try:
            header, body = remoting_call(addr, GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout)
        except (OSError, ValueError) as e:
            errors.append(f"{addr[0]}:{addr[1]} ({_reason(e)})")
            continue
        if header.get("code") == TOPIC_NOT_EXIST:
            return None
        if header.get("code") != 0:
            raise RocketMQError(f"name server {addr[0]}:{addr[1]} refused the route of topic {topic!r}: "
                                f"{header.get('remark') or header.get('code')}")
        route = _lenient_json(body)
        queues: list[Queue] = []
        for qd in route.get("queueDatas") or []:
            if int(qd.get("perm", 6)) & PERM_READ:
                queues.extend(Queue(qd["brokerName"], i) for i in range(int(qd.get("readQueueNums", 0))))
        return sorted(queues)
    raise Unavailable(f"RocketMQ name server {namesrv} is not reachable: {'; '.join(errors)}")


def _reason(e: BaseException) -> str:
    if isinstance(e, socket.timeout):
        return "timed out"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror.lower()
    return str(e) or type(e).__name__


# ------------------------------------------------------------------ native library
class _CMessageQueue(Structure):
    _fields_ = [("topic", c_char * 512), ("brokerName", c_char * 256), ("queueId", c_int)]


class _CPullResult(Structure):
    _fields_ = [("pullStatus", c_int), ("nextBeginOffset", c_longlong), ("minOffset", c_longlong),
                ("maxOffset", c_longlong), ("msgFoundList", POINTER(c_void_p)), ("size", c_int), ("pData", c_void_p)]


class _CSendResult(Structure):
    _fields_ = [("sendStatus", c_int), ("msgId", c_char * 256), ("offset", c_longlong)]


_PROTOTYPES: dict[str, tuple[list[Any], Any]] = {
    "CreateMessage": ([c_char_p], c_void_p),
    "DestroyMessage": ([c_void_p], c_int),
    "SetMessageKeys": ([c_void_p, c_char_p], c_int),
    "SetMessageTags": ([c_void_p, c_char_p], c_int),
    "SetByteMessageBody": ([c_void_p, c_char_p, c_int], c_int),
    "SetMessageProperty": ([c_void_p, c_char_p, c_char_p], c_int),
    "GetMessageKeys": ([c_void_p], c_char_p),
    "GetMessageTags": ([c_void_p], c_char_p),
    "GetMessageBody": ([c_void_p], c_void_p),  # the raw pointer: see _body()
    "GetMessageProperty": ([c_void_p, c_char_p], c_char_p),
    "GetMessageQueueOffset": ([c_void_p], c_longlong),
    "GetMessageStoreTimestamp": ([c_void_p], c_longlong),
    "GetMessageBornTimestamp": ([c_void_p], c_longlong),
    "CreateProducer": ([c_char_p], c_void_p),
    "DestroyProducer": ([c_void_p], c_int),
    "StartProducer": ([c_void_p], c_int),
    "ShutdownProducer": ([c_void_p], c_int),
    "SetProducerNameServerAddress": ([c_void_p, c_char_p], c_int),
    "SetProducerSendMsgTimeout": ([c_void_p, c_int], c_int),
    "SetProducerLogLevel": ([c_void_p, c_int], c_int),
    "SetProducerLogPath": ([c_void_p, c_char_p], c_int),
    "SetProducerLogFileNumAndSize": ([c_void_p, c_int, c_long], c_int),
    "SendMessageSync": ([c_void_p, c_void_p, POINTER(_CSendResult)], c_int),
    "CreatePullConsumer": ([c_char_p], c_void_p),
    "DestroyPullConsumer": ([c_void_p], c_int),
    "StartPullConsumer": ([c_void_p], c_int),
    "ShutdownPullConsumer": ([c_void_p], c_int),
    "SetPullConsumerNameServerAddress": ([c_void_p, c_char_p], c_int),
    "SetPullConsumerLogLevel": ([c_void_p, c_int], c_int),
    "SetPullConsumerLogPath": ([c_void_p, c_char_p], c_int),
    "SetPullConsumerLogFileNumAndSize": ([c_void_p, c_int, c_long], c_int),
    "Pull": ([c_void_p, POINTER(_CMessageQueue), c_char_p, c_longlong, c_int], _CPullResult),
    "ReleasePullResult": ([_CPullResult], c_int),
    "GetLatestErrorMessage": ([], c_char_p),
    "SetProducerInstanceName": ([c_void_p, c_char_p], c_int),
    # C++ entry points (pre-C++11 std::string ABI): the C API has no instance-name setter for pull consumers
    "_ZNSsC1EPKcRKSaIcE": ([c_void_p, c_char_p, c_void_p], None),  # std::string(const char*, const allocator&)
    "_ZNSsD1Ev": ([c_void_p], None),  # ~std::string()
    "_ZN8rocketmq8MQClient15setInstanceNameERKSs": ([c_void_p, c_void_p], None),
}
_lib: Any = None
_lib_lock = threading.Lock()
BODY_FALLBACKS = 0  # bodies read as C strings because the length check failed (tests watch it)


def lib() -> Any:
    """The native library with our prototypes (loaded once per process)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            try:
                import rocketmq.ffi as ffi
            except ImportError as e:  # the wheel is x86_64 Linux only
                raise RocketMQError(f"the RocketMQ client library cannot be loaded: {e} "
                                    "(pip install rocketmq==0.4.4; x86_64 Linux only)") from e
            handle = ctypes.CDLL(ffi._DYLIB_PATH)
            for name, (args, res) in _PROTOTYPES.items():
                fn = getattr(handle, name)
                fn.argtypes, fn.restype = args, res
            _lib = handle
        return _lib


def latest_error() -> str:
    """The native client's last error message; empty when the library was never loaded (nothing of it failed:
    a pull through another client, a test's scripted queue)."""
    if _lib is None:
        return ""
    raw = _lib.GetLatestErrorMessage() or b""
    text = raw.decode("utf-8", "replace").strip()
    text = re.sub(r"<[^>]*rocketmq-client-cpp/([^>]*)>", r"\1", text)
    text = re.sub(r",error:-?\d+,in file .*$", "", text)
    return text[5:] if text.startswith("msg: ") else text


def _body(msg: int) -> bytes:
    global BODY_FALLBACKS
    ptr = lib().GetMessageBody(msg)
    if not ptr:
        return b""
    length = c_size_t.from_address(ptr - 24).value
    capacity = c_size_t.from_address(ptr - 16).value
    if length <= capacity < (1 << 31) and c_char.from_address(ptr + length).value == b"\x00":
        return ctypes.string_at(ptr, length)
    BODY_FALLBACKS += 1
    return ctypes.string_at(ptr)


def instance_name(namesrv: str) -> str:
    """The native client shares one client instance (and its name server list: the first one
    set) among every consumer and producer of a process with the same instance name. One
    instance per (process, name server) keeps two clusters apart."""
    return f"etl-{os.getpid()}-{zlib.crc32(namesrv.encode()):08x}"


def _set_consumer_instance_name(handle: int, name: str) -> None:
    """MQClient::setInstanceName on a pull consumer (the C API only has it for producers and
    push consumers; a pull consumer handle is the MQClient object itself, as in
    SetPullConsumerNameServerAddress)."""
    L = lib()
    s = ctypes.create_string_buffer(64)  # room for a std::string object (one pointer)
    alloc = ctypes.create_string_buffer(8)  # std::allocator<char> is stateless
    L._ZNSsC1EPKcRKSaIcE(s, name.encode(), alloc)
    try:
        L._ZN8rocketmq8MQClient15setInstanceNameERKSs(handle, s)
    finally:
        L._ZNSsD1Ev(s)


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace") if raw else ""


def _log_setup(set_path: Any, set_level: Any, set_size: Any, handle: int) -> None:
    log_dir = current().rocketmq_log_dir
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        set_path(handle, log_dir.encode())
    set_level(handle, LOG_LEVEL_WARN)
    set_size(handle, 3, 20 * 1024 * 1024)


# ------------------------------------------------------------------ consumer
@dataclass
class Message:
    queue: Queue
    offset: int
    body: bytes
    keys: str
    tags: str
    store_ms: int
    born_ms: int
    properties: dict[str, str] = field(default_factory=dict)


@dataclass
class PullResult:
    status: int
    next_offset: int
    min_offset: int
    max_offset: int
    messages: list[Message]

    @property
    def status_name(self) -> str:
        return STATUS_NAMES.get(self.status, str(self.status))


class PullConsumer:
    """Pulls one queue from an offset; keeps no offsets of its own."""

    def __init__(self, namesrv: str, group: str, properties: tuple[str, ...] = ()):
        parse_namesrv(namesrv)
        self.namesrv = namesrv
        self.group = group
        self.properties = tuple(properties)
        L = lib()
        self._lock = threading.Lock()
        self._h = L.CreatePullConsumer(group.encode())
        if not self._h:
            raise RocketMQError(f"cannot create a RocketMQ pull consumer for group {group!r}")
        L.SetPullConsumerNameServerAddress(self._h, namesrv.encode())
        _set_consumer_instance_name(self._h, instance_name(namesrv))
        _log_setup(L.SetPullConsumerLogPath, L.SetPullConsumerLogLevel, L.SetPullConsumerLogFileNumAndSize, self._h)
        if L.StartPullConsumer(self._h) != 0:
            err = latest_error()
            L.DestroyPullConsumer(self._h)
            self._h = None
            raise RocketMQError(f"cannot start a RocketMQ pull consumer (group {group!r}, name server "
                                f"{namesrv}): {err}")

    def pull(self, topic: str, queue: Queue, offset: int, max_num: int = 32, expr: str = "*") -> PullResult:
        """One pull. BROKER_TIMEOUT (broker unreachable, route unknown) comes back as a status."""
        L = lib()
        mq = _CMessageQueue(topic.encode(), queue.broker.encode(), queue.queue_id)
        with self._lock:
            if self._h is None:
                raise RocketMQError("pull consumer is closed")
            res = L.Pull(self._h, byref(mq), expr.encode(), offset, max_num)
            try:
                msgs = [self._message(res.msgFoundList[i], queue) for i in range(res.size)] \
                    if res.pullStatus == PULL_FOUND else []
                return PullResult(res.pullStatus, res.nextBeginOffset, res.minOffset, res.maxOffset, msgs)
            finally:
                L.ReleasePullResult(res)

    def _message(self, h: int, queue: Queue) -> Message:
        L = lib()
        props = {}
        for p in self.properties:
            v = L.GetMessageProperty(h, p.encode())
            if v:
                props[p] = _text(v)
        return Message(queue, L.GetMessageQueueOffset(h), _body(h), _text(L.GetMessageKeys(h)),
                       _text(L.GetMessageTags(h)), L.GetMessageStoreTimestamp(h), L.GetMessageBornTimestamp(h), props)

    def bounds(self, topic: str, queue: Queue) -> tuple[int, int]:
        """(min offset, max offset) of a queue; max is the offset the next message gets."""
        res = self.pull(topic, queue, 0, 1)
        if res.status == PULL_BROKER_TIMEOUT:
            raise Unavailable(f"broker {queue.broker} (queue {queue.queue_id} of topic {topic!r}) is not "
                              f"reachable: {latest_error() or 'no answer'}")
        return res.min_offset, res.max_offset

    def close(self) -> None:
        with self._lock:
            if self._h is not None:
                L = lib()
                L.ShutdownPullConsumer(self._h)
                L.DestroyPullConsumer(self._h)
                self._h = None


# ------------------------------------------------------------------ producer
class Producer:
    """Synchronous sends; safe to call from several threads at once."""

    def __init__(self, namesrv: str, group: str, timeout_ms: int = 3000):
        parse_namesrv(namesrv)
        self.namesrv = namesrv
        self.group = group
        L = lib()
        self._h = L.CreateProducer(group.encode())
        if not self._h:
            raise RocketMQError(f"cannot create a RocketMQ producer for group {group!r}")
        L.SetProducerNameServerAddress(self._h, namesrv.encode())
        L.SetProducerInstanceName(self._h, instance_name(namesrv).encode())
        L.SetProducerSendMsgTimeout(self._h, int(timeout_ms))
        _log_setup(L.SetProducerLogPath, L.SetProducerLogLevel, L.SetProducerLogFileNumAndSize, self._h)
        if L.StartProducer(self._h) != 0:
            err = latest_error()
            L.DestroyProducer(self._h)
            self._h = None
            raise RocketMQError(f"cannot start a RocketMQ producer (group {group!r}, name server {namesrv}): {err}")

    def send(self, topic: str, body: bytes, keys: str | None = None, tags: str | None = None,
             properties: dict[str, str] | None = None) -> int:
        """Send one message; returns its queue offset. Raises Rejected or Unavailable."""
        if not body:
            raise Rejected("RocketMQ does not accept a message with an empty body")
        if self._h is None:
            raise RocketMQError("producer is closed")
        L = lib()
        m = L.CreateMessage(topic.encode())
        if not m:
            raise RocketMQError("cannot create a RocketMQ message")
        try:
            if keys:
                L.SetMessageKeys(m, keys.encode())
            if tags:
                L.SetMessageTags(m, tags.encode())
            for k, v in (properties or {}).items():
                L.SetMessageProperty(m, k.encode(), v.encode())
            L.SetByteMessageBody(m, body, len(body))
            res = _CSendResult()
            for attempt in range(NO_ROUTE_RETRIES + 1):
                status = L.SendMessageSync(self._h, m, byref(res))
                if status == 0:
                    break
                err = latest_error()
                # concurrent sends race on the client's route table: "No route info" comes before
                # anything goes on the wire, so trying again at once cannot duplicate the message
                if "No route info" not in err or attempt == NO_ROUTE_RETRIES:
                    raise classify_send_error(err, topic)
                time.sleep(0.01 * 2 ** attempt)
        finally:
            L.DestroyMessage(m)
        if res.sendStatus != SEND_OK:
            raise Unavailable(f"broker stored the message but reported status {res.sendStatus} "
                              "(flush or replication timeout)")
        return int(res.offset)

    def close(self) -> None:
        if self._h is not None:
            L = lib()
            L.ShutdownProducer(self._h)
            L.DestroyProducer(self._h)
            self._h = None


_REJECTED = re.compile(r"body is empty|exceeds the max|body length|topic .*(illegal|invalid|not allowed|reserved)|"
                       r"the specified topic is|topic length", re.IGNORECASE)


def classify_send_error(text: str, topic: str) -> RocketMQError:
    """Validation failures are Rejected; everything else (no route, timeouts, broker busy) Unavailable."""
    text = text or "send failed without an error message"
    if _REJECTED.search(text):
        return Rejected(text)
    if "No route info" in text:
        return Unavailable(f"no route to topic {topic!r} (name server or broker down, or the topic does not "
                           f"exist and the broker does not auto-create topics): {text}")
    return Unavailable(text)


# ------------------------------------------------------------------ per-process cache
_cache: dict[tuple[str, str, str, tuple[str, ...]], Any] = {}
_cache_lock = threading.Lock()


def shared_consumer(namesrv: str, group: str, properties: tuple[str, ...] = ()) -> PullConsumer:
    """One pull consumer per (name server, group) per process (the native client allows no more)."""
    key = ("consumer", namesrv, group, tuple(properties))
    with _cache_lock:
        c = _cache.get(key)
        if c is None:
            for other in [k for k in _cache if k[:3] == key[:3]]:  # same group, other properties
                _cache.pop(other).close()
            c = _cache[key] = PullConsumer(namesrv, group, properties)
        return c


def shared_producer(namesrv: str, group: str) -> Producer:
    key = ("producer", namesrv, group, ())
    with _cache_lock:
        p = _cache.get(key)
        if p is None:
            p = _cache[key] = Producer(namesrv, group)
        return p


def close_all() -> None:
    with _cache_lock:
        clients = list(_cache.values())
        _cache.clear()
    for c in clients:
        with contextlib.suppress(Exception):  # shutting down anyway
            c.close()


atexit.register(close_all)
