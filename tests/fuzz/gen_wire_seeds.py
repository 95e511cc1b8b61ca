#!/usr/bin/env python3
"""Seeds for fuzz_wire.c (fuzz-chan, fuzz-tcp, fuzz-shm): well-formed peer
streams in the harness's chunk format (u8 flags, u16 length, bytes; flags
bit 0 passes a memfd, bit 1 /dev/null) built from the frame layouts in
transport/chan.h, transport/tcp/tcp.h and transport/shm/shm.c. Also the
seeds of fuzz_remote.c: the tracer replies among CORPUS_DIR/proto/ (which
rh-fuzz-seeds writes from the encoder), each as one record after a state
byte. And those of fuzz_server.c: CPU-server messages of corpus/proto as
records, and a type table (corpus/typetab/) cut into TYPES chunks. And
fuzz_verbs.c's: completions, advertisements and counters as records.

usage: gen_wire_seeds.py CORPUS_DIR   (writes CORPUS_DIR/{chan,tcp,shm,remote,server,verbs}/)
"""
import os
import struct
import sys

SETUP, MSG, CREDIT = 1, 2, 3
TCP_REQ, TCP_RESP, TCP_AD, TCP_UNAD = 16, 17, 18, 19
SHM_AD, SHM_UNAD = 16, 17
READ, WRITE, CAS, FAA, WRITE8 = 1, 2, 3, 4, 5
BASE, LEN = 0x4a0000000000, 16384  # fuzz_wire.c's RANGE_BASE, RANGE_LEN


def hdr(t, arg=0, wr_id=0, n=0):
    return struct.pack("<IIQQ", t, arg, wr_id, n)


def chunk(b, flags=0):
    return struct.pack("<BH", flags, len(b)) + b


def stream(*frames):
    return b"".join(chunk(f) for f in frames)


def setup():
    return hdr(SETUP, 8, 0, 4096)


def msg(b):
    return hdr(MSG, 0, 0, len(b)) + b


def rw(op, seq, segs, data=b""):
    body = struct.pack("<II", len(segs), 0)
    body += b"".join(struct.pack("<QII", a, n, 0) for a, n in segs)
    return hdr(TCP_REQ, op, seq, len(body) + len(data)) + body + data


def atomic(op, seq, addr, a, b=0):
    return hdr(TCP_REQ, op, seq, 24) + struct.pack("<QQQ", addr, a, b)


def seeds():
    chan = {
        "messages-credit": stream(setup(), msg(b"hello"), hdr(CREDIT, 3), msg(b"")),
        "over-credits": stream(setup(), *[msg(bytes([i]) * 10) for i in range(9)]),
        "over-max-msg": stream(setup(), hdr(MSG, 0, 0, 5000) + b"x" * 5000),
        "split-frames": b"".join(chunk(bytes([c])) for c in setup() + msg(b"split")),
        "unknown-type": stream(setup(), hdr(99, 1, 2, 0)),
    }
    tcp = {
        "read": stream(setup(), rw(READ, 7, [(BASE + 16, 64)])),
        "write-two-segs": stream(setup(), rw(WRITE, 8, [(BASE, 8), (BASE + 100, 4)], b"A" * 12)),
        "atomics": stream(setup(), atomic(CAS, 9, BASE + 8, 0, 5), atomic(FAA, 10, BASE + 8, 3),
                          atomic(WRITE8, 11, BASE + 16, 42)),
        "out-of-range": stream(setup(), rw(READ, 12, [(BASE + LEN - 8, 64)]),
                               rw(WRITE, 13, [(BASE - 8, 8)], b"B" * 8)),
        "answers": stream(setup(), hdr(TCP_RESP, 0, 1, 256) + b"C" * 256, hdr(TCP_RESP, 0, 2, 0),
                          hdr(TCP_RESP, 0, 3, 8) + struct.pack("<Q", 0)),
        "ads": stream(setup(), hdr(TCP_AD, 0, 0, 16) + struct.pack("<QQ", 0x1000, 4096),
                      hdr(TCP_UNAD, 0, 0, 16) + struct.pack("<QQ", 0x1000, 4096),
                      hdr(TCP_UNAD, 0, 0, 16) + struct.pack("<QQ", 0x9000, 4096)),
        "messages": stream(setup(), msg(b"ping"), hdr(CREDIT, 1)),
    }
    ad = struct.pack("<QQQ", 0x1000, 4096, 0)
    shm = {
        "ad-unad": chunk(setup()) + chunk(hdr(SHM_AD, 0, 0, 24) + ad, 1) +
        chunk(hdr(SHM_UNAD, 0, 0, 24) + ad),
        "ad-devnull": chunk(setup()) + chunk(hdr(SHM_AD, 0, 0, 24) + ad, 2),
        "ad-without-fd": stream(setup(), hdr(SHM_AD, 0, 0, 24) + ad),
        "ad-past-file": chunk(setup()) +
        chunk(hdr(SHM_AD, 0, 0, 24) + struct.pack("<QQQ", 0x1000, 65536, 4096), 1),
        "messages": stream(setup(), msg(b"ping"), hdr(CREDIT, 1)),
    }
    return {"chan": chan, "tcp": tcp, "shm": shm}


REPLIES = ["marked", "mark_ack", "full_done", "full_done-empty", "evac_refs", "cards_fixed",
           "cards_fixed-last", "evacuated", "free_ok", "error", "mark_refs", "pong", "ping"]


def record(host, msg):
    return struct.pack("<BH", host, len(msg)) + msg


def remote_seeds(out):
    msgs = {}
    for name in REPLIES:
        with open(os.path.join(out, "proto", name), "rb") as fp:
            msgs[name] = fp.read()
    files = {name: b"\x07" + record(0, m) for name, m in msgs.items()}
    files["evacuation"] = b"\x01" + record(0, msgs["evac_refs"]) + record(0, msgs["evacuated"])
    files["cards"] = b"\x02" + record(1, msgs["cards_fixed"]) + record(1, msgs["cards_fixed-last"])
    files["full"] = b"\x04" + record(0, msgs["mark_refs"]) + record(1, msgs["mark_ack"]) + \
        record(0, msgs["full_done"])
    return files


def proto_msg(mtype, seq, payload):
    """wire/proto.h's header: "HR", version 3, type, u32 payload length, u32 seq."""
    return b"HR" + bytes([3, mtype]) + struct.pack("<II", len(payload), seq) + payload


def types_chunk(table, off, n, seq):
    return proto_msg(2, seq, struct.pack("<III", off, len(table), n) + table[off:off + n])


def server_seeds(out):
    def rec(m):
        return struct.pack("<H", len(m)) + m

    def read(sub, name):
        with open(os.path.join(out, sub, name), "rb") as fp:
            return fp.read()

    p = {n: read("proto", n) for n in ["types", "ping", "bye", "free", "regions", "roots",
                                         "evacuate", "full-begin", "mark_refs", "fix_cards",
                                         "hello_ok", "hello"]}
    table = read("typetab", "all-layouts.json")
    third = len(table) // 3
    chunks = [types_chunk(table, 0, third, 1), types_chunk(table, third, third, 2),
              types_chunk(table, 2 * third, len(table) - 2 * third, 3)]
    return {
        "types-ping-bye": b"\x00" + rec(p["types"]) + rec(p["ping"]) + rec(p["bye"]),
        "types-chunks": b"\x00" + b"".join(rec(c) for c in chunks) + rec(p["bye"]),
        "types-chunk-out-of-order": b"\x00" + rec(chunks[0]) + rec(chunks[2]),
        "types-restart": b"\x00" + rec(chunks[0]) + b"".join(rec(c) for c in chunks),
        "free": b"\x00" + rec(p["free"]) + rec(p["bye"]),
        # FREE (type 5) of regions 5 and 6, which partition 1 hosts.
        "free-own": b"\x00" + rec(proto_msg(5, 4, struct.pack("<III", 2, 5, 6))) +
        rec(p["ping"]) + rec(p["bye"]),
        "collector": b"\x00" + rec(p["types"]) + b"".join(
            rec(p[n]) for n in ["regions", "roots", "evacuate", "full-begin", "mark_refs",
                                "fix_cards"]),
        "unexpected": b"\x00" + rec(p["hello_ok"]),
        "own-hello": b"\x01" + rec(p["hello"]) + rec(p["ping"]),
    }


def verbs_seeds():
    """fuzz_verbs.c records: u8 op, u8 imm, u16 length, data."""
    def rec(op, imm, b=b""):
        return struct.pack("<BBH", op, imm, len(b)) + b

    ad = struct.pack("<QQII", 0x1000, 4096, 7, 0)
    ctrs = struct.pack("<QQQ", 1, 2, 3)
    ctrs += struct.pack("<Q", 1 ^ 2 ^ 3 ^ 0x5eed5eed5eed)
    return {
        "user-take": rec(0, 1, b"hello") + rec(0x80, 0),
        "auth-take": rec(0, 2, b"x" * 48) + rec(0x81, 0),
        "advert-withdraw": rec(0, 3, ad) + rec(0, 4, ad) + rec(0, 4, ad),
        "advert-short": rec(0, 3, ad[:10]),
        "unknown-kind": rec(0, 9, b"?"),
        "no-imm": rec(1, 0, b"?"),
        "failed": rec(2, 1, b""),
        "counters": rec(0x40, 0, ctrs) + rec(0x40, 0, ctrs[:8]),
        "fill-and-drain": b"".join(rec(0, 1, bytes([k]) * 100) for k in range(9)) +
        b"".join(rec(0x80, 0) for _ in range(9)),
        "wrong-order": rec(0, 2, b"auth") + rec(0x80, 0),
    }


def main():
    out = sys.argv[1]
    all_seeds = seeds()
    all_seeds["remote"] = remote_seeds(out)
    all_seeds["server"] = server_seeds(out)
    all_seeds["verbs"] = verbs_seeds()
    for name, files in all_seeds.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        for f, b in files.items():
            with open(os.path.join(d, f), "wb") as fp:
                fp.write(b)


if __name__ == "__main__":
    main()
