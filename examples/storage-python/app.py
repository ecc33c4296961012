"""storage-python: an agmsg storage driver written in Python.

Built into a wasm32-wasip2 component with componentize-py against the WIT world
`agmsg:storage/storage-driver@1.2.0` (see README.md). It shows the storage contract is not tied to Rust:
the host, the contract suite and agmsg see the same component interface either way.

The store is one JSON file in the store directory (the host preopens it at /store): the event log
(messages and exact read marks, in arrival order) and each recipient's delivery frontier. Every op takes
the host's store lock, reads the file, and writes it back through a temp file and a rename when it changed,
so a crash never leaves half a store. Small and simple; a big store wants an index.

The delivery cursor is the 1-based position of a message among the messages of the log, as a decimal string;
"0" is the zero cursor.
"""

import json
import os
import time

import wit_world.exports
from componentize_py_types import Err
from wit_world.exports import driver
from wit_world.imports import lock, log, types

NAME = "storage-python"
STORE_DIR = "/store"
STORE_FILE = "store.json"
LOCK_WAIT_MS = 10_000
# Cursors saturate here, as a u64 position would.
MAX_POSITION = 2**64 - 1


# ---------------------------------------------------------------------------------------------------------
# Errors, names, ids and times

class Failure(Exception):
    """A failure this driver reports as the WIT `driver-error` (raised as `Err` at the boundary)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def runtime_error(message):
    return Failure(types.Status.RUNTIME_ERROR, message)


def corrupt_state(message):
    return Failure(types.Status.CORRUPT_STATE, message)


def check_name(what, name):
    """The contract's name rules: not empty, no ':', '/', '\\', '..' or control characters."""
    reason = None
    if name == "":
        reason = "must not be empty"
    elif ":" in name:
        reason = "must not contain ':'"
    elif "/" in name or "\\" in name:
        reason = "must not contain '/' or '\\'"
    elif ".." in name:
        reason = "must not contain '..'"
    elif any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in name):
        reason = "must not contain control characters"
    if reason is not None:
        raise runtime_error(f"invalid {what} name {name!r}: {reason}")


def check_pairs(pairs):
    """A watch call names at least one well-formed pair, all of one team."""
    if not pairs:
        raise runtime_error("at least one team:agent pair is required")
    for pair in pairs:
        check_name("team", pair.team)
        check_name("agent", pair.agent)
        if pair.team != pairs[0].team:
            raise runtime_error(f"one call cannot span teams ({pairs[0].team}, {pair.team})")


def new_id():
    """A UUIDv7: 48 bits of Unix milliseconds, the version, 74 random bits and the RFC 4122 variant."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a = rand >> 68  # 12 bits
    rand_b = rand & ((1 << 62) - 1)  # 62 bits
    value = (millis & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def now_utc():
    """ISO-8601 UTC with second resolution, as agmsg writes it: 2026-05-30T19:00:00Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def parse_cursor(cursor):
    """A cursor is a decimal position; anything else is refused. Huge positions saturate."""
    if cursor == "" or any(c not in "0123456789" for c in cursor):
        raise runtime_error(f"invalid cursor {cursor!r}: expected a decimal position")
    digits = cursor.lstrip("0") or "0"
    if len(digits) > 20:
        return MAX_POSITION
    return min(int(digits), MAX_POSITION)


def debug(message):
    log.log(log.Level.DEBUG, message)


# ---------------------------------------------------------------------------------------------------------
# The store

def store_path():
    return f"{STORE_DIR}/{STORE_FILE}"


def sent_event(message_id, team, sender, recipient, body, at):
    return {"type": "message_sent", "id": message_id, "team": team, "from": sender, "to": recipient, "body": body, "at": at}


def read_event(event_id, msg_id, team, agent, at):
    return {"type": "message_read", "id": event_id, "msg_id": msg_id, "team": team, "agent": agent, "at": at}


# The string fields each stored event type must carry.
FIELDS = {
    "message_sent": ("id", "team", "from", "to", "body", "at"),
    "message_read": ("id", "msg_id", "team", "agent", "at"),
}


class Store:
    """The whole store in memory: `events` in arrival order, `frontiers` by "team\\tagent"."""

    def __init__(self, events, frontiers):
        self.events = events
        self.frontiers = frontiers
        self._reindex()

    def _reindex(self):
        self.messages = [e for e in self.events if e["type"] == "message_sent"]
        self.reads = {(e["team"], e["agent"], e["msg_id"]) for e in self.events if e["type"] == "message_read"}

    @staticmethod
    def load():
        try:
            with open(store_path(), "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return Store([], {})
        try:
            doc = json.loads(raw)
            events = doc["events"]
            frontiers = doc["frontiers"]
            if not isinstance(events, list) or not isinstance(frontiers, dict):
                raise ValueError("events must be a list and frontiers an object")
            for e in events:
                fields = FIELDS.get(e.get("type")) if isinstance(e, dict) else None
                if fields is None or not all(isinstance(e.get(k), str) for k in fields):
                    raise ValueError(f"malformed event {str(e)[:200]}")
            if not all(isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in frontiers.items()):
                raise ValueError("malformed frontiers")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise corrupt_state(f"{STORE_FILE}: {e}") from None
        return Store(events, frontiers)

    def save(self):
        """Write the whole store to a temp file, then rename it into place."""
        tmp = f"{STORE_DIR}/.{STORE_FILE}.{new_id()}"
        data = json.dumps({"events": self.events, "frontiers": self.frontiers}, ensure_ascii=False, separators=(",", ":"))
        try:
            with open(tmp, "wb") as f:
                f.write(data.encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, store_path())
        except BaseException:
            try:
                os.remove(tmp)
            except OSError:
                pass
            raise

    def tip(self):
        return len(self.messages)

    def is_read(self, team, agent, msg_id):
        return (team, agent, msg_id) in self.reads

    def frontier(self, team, agent):
        return self.frontiers.get(f"{team}\t{agent}", 0)

    def positioned(self):
        """(position, message) for every message, positions from 1."""
        return enumerate(self.messages, start=1)

    def unread_after(self, team, agent, after):
        """Messages to (team, agent) after position `after` that their recipient has not read."""
        return [
            (p, m)
            for p, m in self.positioned()
            if p > after and m["team"] == team and m["to"] == agent and not self.is_read(team, agent, m["id"])
        ]

    def append_read(self, event):
        self.events.append(event)
        self.reads.add((event["team"], event["agent"], event["msg_id"]))

    def consume(self, team, agent, target, ids):
        """§2.2: record the exact reads, then move the frontier over the read prefix ending no later than
        min(target, tip); the first message to (team, agent) still unread stops it."""
        at = now_utc()
        for msg_id in ids:
            if not self.is_read(team, agent, msg_id):
                self.append_read(read_event(new_id(), msg_id, team, agent, at))
        current = self.frontier(team, agent)
        cap = min(target, self.tip())
        gap = next((p for p, _ in self.unread_after(team, agent, current) if p <= cap), None)
        self.frontiers[f"{team}\t{agent}"] = max(current, cap if gap is None else gap - 1)


def with_store(f):
    """Run `f(store)` under the store lock; `f` returns (value, changed), and a changed store is saved."""
    with acquire_lock():
        store = Store.load()
        value, changed = f(store)
        if changed:
            store.save()
        return value


def acquire_lock():
    try:
        return lock.acquire(LOCK_WAIT_MS)
    except Err as e:
        reasons = {
            lock.LockError.TIMEOUT: f"the store lock was busy for {LOCK_WAIT_MS} ms",
            lock.LockError.ALREADY_HELD: "the store lock is already held by this driver",
            lock.LockError.UNAVAILABLE: "the host could not take the store lock",
        }
        raise runtime_error(reasons.get(e.value, f"the store lock failed: {e.value}")) from None


# ---------------------------------------------------------------------------------------------------------
# Conversions between the stored dicts and the WIT records

def to_message(m):
    return types.Message(id=m["id"], team=m["team"], from_=m["from"], to=m["to"], body=m["body"], at=m["at"])


def to_event(e):
    if e["type"] == "message_sent":
        return types.Event_MessageSent(to_message(e))
    return types.Event_MessageRead(types.ReadMark(id=e["id"], msg_id=e["msg_id"], team=e["team"], agent=e["agent"], at=e["at"]))


def from_event(event):
    if isinstance(event, types.Event_MessageSent):
        m = event.value
        return sent_event(m.id, m.team, m.from_, m.to, m.body, m.at)
    r = event.value
    return read_event(r.id, r.msg_id, r.team, r.agent, r.at)


# ---------------------------------------------------------------------------------------------------------
# The boundary: every failure leaves as a `driver-error`, never as a trap

def contract_op(method):
    """Turn a `Failure` or an I/O error into `Err(DriverError)`; anything else still traps (a bug)."""

    def wrapped(*args):
        try:
            return method(*args)
        except Failure as e:
            raise Err(types.DriverError(status=e.status, message=f"{NAME}: {e.message}", directive=None)) from None
        except OSError as e:
            raise Err(types.DriverError(status=types.Status.RUNTIME_ERROR, message=f"{NAME}: {e}", directive=None)) from None

    wrapped.__name__ = method.__name__
    wrapped.__doc__ = method.__doc__
    return wrapped


class Exporter(driver.Exporter):
    """A snapshot taken under the lock when the export started, handed out page by page."""

    def __init__(self, events):
        self.events = events
        self.next = 0

    @contract_op
    def next_page(self, max):
        page = self.events[self.next:self.next + max]
        self.next += len(page)
        return [to_event(e) for e in page]


class Importer(driver.Importer):
    """Staged events in memory; `commit` applies them all or none, in one write of the store under the lock.
    Dropping it without a commit leaves nothing behind."""

    def __init__(self):
        self.staged = []

    @contract_op
    def push_page(self, events):
        self.staged.extend(from_event(e) for e in events)

    @contract_op
    def commit(self):
        staged, self.staged = self.staged, []

        def apply(store):
            by_id = {m["id"]: m for m in store.messages}
            known_reads = {e["id"] for e in store.events if e["type"] == "message_read"}
            for e in staged:
                if e["type"] == "message_sent":
                    old = by_id.get(e["id"])
                    if old is None:
                        store.events.append(e)
                        store.messages.append(e)
                        by_id[e["id"]] = e
                    elif old != e:
                        raise runtime_error(f"import conflict: message {e['id']} already exists with different content")
                elif e["id"] not in known_reads and not store.is_read(e["team"], e["agent"], e["msg_id"]):
                    store.append_read(e)
                    known_reads.add(e["id"])
            return None, True

        with_store(apply)


class Driver(wit_world.exports.Driver):
    @contract_op
    def check(self):
        return None

    def describe(self):
        return types.Description(
            name=NAME,
            backend="one JSON file, rewritten atomically (Python, componentize-py)",
            capabilities=[],
            store_file=types.StoreFile(key="file", path=STORE_FILE),
        )

    @contract_op
    def init(self):
        def create(store):
            missing = not os.path.exists(store_path())
            if missing:
                debug(f"creating {STORE_FILE}")
            return None, missing

        with_store(create)

    @contract_op
    def store_exists(self):
        with acquire_lock():
            return os.path.isfile(store_path())

    @contract_op
    def send(self, team, sender, recipient, body):
        check_name("team", team)
        check_name("sender", sender)
        check_name("recipient", recipient)

        def append(store):
            message_id = new_id()
            e = sent_event(message_id, team, sender, recipient, body, now_utc())
            store.events.append(e)
            store.messages.append(e)
            return message_id, True

        return with_store(append)

    @contract_op
    def list_unread(self, team, agent, limit):
        check_name("team", team)
        check_name("agent", agent)

        def unread(store):
            found = store.unread_after(team, agent, store.frontier(team, agent))
            if limit is not None:
                found = found[:limit]
            return [to_message(m) for _, m in found], False

        return with_store(unread)

    @contract_op
    def mark_read_batch(self, team, agent, ids):
        check_name("team", team)
        check_name("agent", agent)

        def mark(store):
            store.consume(team, agent, store.tip(), ids)
            return None, True

        with_store(mark)

    @contract_op
    def read_cursor_get(self, team, agent):
        check_name("team", team)
        check_name("agent", agent)
        return with_store(lambda store: (str(store.frontier(team, agent)), False))

    @contract_op
    def read_cursor_consume(self, team, agent, cursor, ids):
        check_name("team", team)
        check_name("agent", agent)
        target = parse_cursor(cursor)

        def consume(store):
            store.consume(team, agent, target, ids)
            return None, True

        with_store(consume)

    @contract_op
    def watch_tip(self, pairs):
        check_pairs(pairs)
        return with_store(lambda store: (str(store.tip()), False))

    @contract_op
    def watch_after(self, cursor, pairs):
        check_pairs(pairs)
        after = parse_cursor(cursor)
        wanted = {(p.team, p.agent) for p in pairs}

        def poll(store):
            messages = [
                to_message(m)
                for p, m in store.positioned()
                if p > after and (m["team"], m["to"]) in wanted and not store.is_read(m["team"], m["to"], m["id"])
            ]
            # Never regress: a cursor beyond the tip comes back as it was.
            return types.WatchBatch(messages=messages, cursor=str(max(store.tip(), after))), False

        return with_store(poll)

    @contract_op
    def history(self, team, agent, limit):
        check_name("team", team)
        if agent is not None:
            check_name("agent", agent)

        def select(store):
            matching = [
                m for m in store.messages if m["team"] == team and (agent is None or agent in (m["from"], m["to"]))
            ]
            if limit is not None:
                matching = matching[max(0, len(matching) - limit):]
            return [to_message(m) for m in matching], False

        return with_store(select)

    @contract_op
    def export_events(self):
        return Exporter(with_store(lambda store: (list(store.events), False)))

    @contract_op
    def import_events(self):
        return Importer()

    @contract_op
    def compact(self):
        def coalesce(store):
            seen = set()
            kept = []
            for e in store.events:
                if e["type"] == "message_read":
                    key = (e["team"], e["agent"], e["msg_id"])
                    if key in seen:
                        continue  # the first read mark per (team, agent, msg_id) stays
                    seen.add(key)
                kept.append(e)
            changed = len(kept) != len(store.events)
            store.events = kept
            return None, changed

        with_store(coalesce)
