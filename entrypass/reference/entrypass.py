#!/usr/bin/env python3
"""Reference implementation of seckill entry passes, layout version 1.

The layout is the package doc of github.com/seckill/seckill/entrypass; this
file is a second, independent reading of it for gateway teams, using only the
Python 3 standard library. CI checks it against entrypass/testdata/vectors.json
and against the Go package (entrypass/reference_test.go).

    python3 entrypass.py VECTORS.json   check every vector; exit 1 on a mismatch
    python3 entrypass.py --batch        JSON lines on stdin, one answer per line:
        {"op": "mint", "key_id", "secret_hex", "claims", "nonce_hex"} -> {"pass"}
        {"op": "verify", "key_ring", "pass", "campaign_id", "sku_id", "user_id",
         "now_ms"} -> {"error": reason or null, "key_id", "claims", "nonce_hex"}

Claims are dicts as in the vectors: campaign_id, sku_id, user_id, tier, risk,
subjects (kind -> 16 hex digits), not_before_ms, expires_at_ms.
"""
import base64
import hashlib
import hmac
import json
import struct
import sys

VERSION = 1
DOMAIN = b"seckill/entry-pass/v1\x00"
SUBJECT_DOMAIN = b"seckill/entry-pass/subject/v1\x00"
SUBJECT_KINDS = ("device", "payment_account", "address", "network")  # bit order
NONCE_SIZE, SUBJECT_KEY_SIZE, MAC_SIZE, MAX_ID_LENGTH = 16, 8, 32, 64
MIN_TEXT_LENGTH, MAX_TEXT_LENGTH = 100, 395
MAX_LIFETIME_MS, MAX_TIME_MS, LEEWAY_MS = 86_400_000, 2**53 - 1, 2_000
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
URL_ALPHABET = set(_ALNUM + "-_")
ID_ALPHABET = set(_ALNUM + "._:-")


class EntryPassError(Exception):
    """A refused pass; reason is one of malformed, unknown_key, bad_mac,
    wrong_scope, wrong_user, not_yet_valid, expired."""

    def __init__(self, reason, expires_at_ms=None):
        super().__init__(reason)
        self.reason, self.expires_at_ms = reason, expires_at_ms


def parse_key_ring(text):
    """'kid:hex,kid:hex' -> [(kid, secret)]; the first signs. Errors never show a secret."""
    ring = []
    for n, entry in enumerate(text.split(","), 1):
        kid, sep, secret_hex = (part.strip() for part in entry.partition(":"))
        if not sep or not (kid.isascii() and kid.isdigit()) or int(kid) > 255:
            raise ValueError(f"entry {n}: not kid:hex with a key id 0-255")
        try:
            if not secret_hex.isalnum():  # bytes.fromhex would skip inner spaces
                raise ValueError
            secret = bytes.fromhex(secret_hex)
        except ValueError:
            raise ValueError(f"key id {kid}: the secret is not hex") from None
        if not 32 <= len(secret) <= 64 or int(kid) in dict(ring):
            raise ValueError(f"key id {kid}: need a unique id and a 32-64 byte secret")
        ring.append((int(kid), secret))
    return ring


def subject_key(secret, kind, value):
    """The issuer's 8-byte keyed hash of one subject value (a str, hashed as UTF-8)."""
    data = SUBJECT_DOMAIN + bytes([SUBJECT_KINDS.index(kind)]) + value.encode()
    return hmac.new(secret, data, hashlib.sha256).digest()[:SUBJECT_KEY_SIZE]


def _b64(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def request_id(nonce):
    """The request_id a reserve with this pass must use: 'ep.' + base64url(nonce)."""
    return "ep." + _b64(nonce)


def _valid_id(s):
    return 1 <= len(s) <= MAX_ID_LENGTH and s not in (".", "..") and set(s) <= ID_ALPHABET


def _times_valid(not_before, expires_at):
    return 0 <= not_before < expires_at <= MAX_TIME_MS and expires_at - not_before <= MAX_LIFETIME_MS


def mint(key_id, secret, claims, nonce):
    """The pass text for claims signed by (key_id, secret) with a 16-byte nonce
    (os.urandom(16) in production)."""
    ids = [claims["campaign_id"], claims["sku_id"], claims["user_id"]]
    if not all(_valid_id(i) for i in ids) or len(nonce) != NONCE_SIZE:
        raise ValueError("bad claims: an id breaks the id rule, or the nonce is not 16 bytes")
    if not _times_valid(claims["not_before_ms"], claims["expires_at_ms"]):
        raise ValueError("bad claims: times out of bounds")
    payload = bytes([VERSION, key_id])
    for i in ids:
        payload += bytes([len(i)]) + i.encode("ascii")
    flags, keys = 0, b""
    for bit, kind in enumerate(SUBJECT_KINDS):
        if kind in claims["subjects"]:
            flags |= 1 << bit
            keys += bytes.fromhex(claims["subjects"][kind])
    payload += bytes([claims["tier"], claims["risk"], flags]) + keys
    payload += struct.pack(">QQ", claims["not_before_ms"], claims["expires_at_ms"]) + nonce
    return _b64(payload + hmac.new(secret, DOMAIN + payload, hashlib.sha256).digest())


def verify(ring, text, campaign_id, sku_id, user_id, now_ms):
    """Check text in the layout's order; return {key_id, claims, nonce} or raise EntryPassError."""
    if not MIN_TEXT_LENGTH <= len(text) <= MAX_TEXT_LENGTH or len(text) % 4 == 1:
        raise EntryPassError("malformed")
    if not set(text) <= URL_ALPHABET:
        raise EntryPassError("malformed")
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(raw) != text:  # non-zero unused bits in the last character
        raise EntryPassError("malformed")
    if raw[0] != VERSION:
        raise EntryPassError("malformed")
    secret = dict(ring).get(raw[1])
    if secret is None:
        raise EntryPassError("unknown_key")
    payload, tag = raw[:-MAC_SIZE], raw[-MAC_SIZE:]
    if not hmac.compare_digest(hmac.new(secret, DOMAIN + payload, hashlib.sha256).digest(), tag):
        raise EntryPassError("bad_mac")
    at, ids = 2, []
    for _ in range(3):
        size = payload[at] if at < len(payload) else 0
        if not 1 <= size <= MAX_ID_LENGTH or at + 1 + size > len(payload):
            raise EntryPassError("malformed")
        ids.append(payload[at + 1:at + 1 + size].decode("latin-1"))
        at += 1 + size
    if len(payload) - at < 3 or payload[at + 2] >> len(SUBJECT_KINDS):
        raise EntryPassError("malformed")
    tier, risk, flags = payload[at:at + 3]
    at += 3
    subjects = {}
    for bit, kind in enumerate(SUBJECT_KINDS):
        if flags & (1 << bit):
            if len(payload) - at < SUBJECT_KEY_SIZE:
                raise EntryPassError("malformed")
            subjects[kind] = payload[at:at + SUBJECT_KEY_SIZE].hex()
            at += SUBJECT_KEY_SIZE
    if len(payload) - at != 16 + NONCE_SIZE:
        raise EntryPassError("malformed")
    not_before, expires_at = struct.unpack(">QQ", payload[at:at + 16])
    if not _times_valid(not_before, expires_at):
        raise EntryPassError("malformed")
    if ids[0] != campaign_id or ids[1] != sku_id:
        raise EntryPassError("wrong_scope")
    if ids[2] != user_id:
        raise EntryPassError("wrong_user")
    if now_ms < not_before - LEEWAY_MS:
        raise EntryPassError("not_yet_valid")
    if now_ms >= expires_at + LEEWAY_MS:
        raise EntryPassError("expired", expires_at)
    claims = dict(campaign_id=ids[0], sku_id=ids[1], user_id=ids[2], tier=tier, risk=risk,
                  subjects=subjects, not_before_ms=not_before, expires_at_ms=expires_at)
    return {"key_id": raw[1], "claims": claims, "nonce": payload[at + 16:]}


def check_vectors(path):
    """Check every vector of the file; return a list of failures."""
    with open(path, encoding="utf-8") as f:
        v = json.load(f)
    failures = []
    if (v["version"], bytes.fromhex(v["domain_hex"]), bytes.fromhex(v["subject_domain_hex"]),
            v["leeway_ms"]) != (VERSION, DOMAIN, SUBJECT_DOMAIN, LEEWAY_MS):
        failures.append("the vectors' constants differ from this implementation's")
    ring = parse_key_ring(v["key_ring"])
    secret = bytes.fromhex(v["subject_secret_hex"])
    for s in v["subject_keys"]:
        if subject_key(secret, s["kind"], s["value"]).hex() != s["key_hex"]:
            failures.append(f"subject key {s['kind']} {s['value']!r}")
    for tc in v["valid"]:
        nonce = bytes.fromhex(tc["nonce_hex"])
        text = mint(tc["key_id"], dict(ring)[tc["key_id"]], tc["claims"], nonce)
        if text != tc["pass"] or text != _b64(bytes.fromhex(tc["payload_hex"] + tc["mac_hex"])):
            failures.append(f"mint {tc['name']}: {text}")
        if request_id(nonce) != tc["request_id"]:
            failures.append(f"request_id {tc['name']}")
        c = tc["claims"]
        for now in tc["verify_at_ms"]:
            try:
                got = verify(ring, tc["pass"], c["campaign_id"], c["sku_id"], c["user_id"], now)
            except EntryPassError as e:
                failures.append(f"verify {tc['name']} at {now}: {e.reason}")
                continue
            if got != {"key_id": tc["key_id"], "claims": c, "nonce": nonce}:
                failures.append(f"verify {tc['name']} at {now}: {got}")
    for tc in v["invalid"]:
        try:
            verify(ring, tc["pass"], tc["campaign_id"], tc["sku_id"], tc["user_id"], tc["now_ms"])
            failures.append(f"invalid {tc['name']}: accepted")
        except EntryPassError as e:
            if e.reason != tc["error"] or (e.reason == "expired" and e.expires_at_ms != tc["expires_at_ms"]):
                failures.append(f"invalid {tc['name']}: {e.reason}, want {tc['error']}")
    print(f"{len(v['subject_keys'])} subject keys, {len(v['valid'])} valid and "
          f"{len(v['invalid'])} invalid passes checked: {len(failures)} failures")
    return failures


def batch(lines):
    """Answer each JSON request line with one JSON line (see the module doc)."""
    for line in lines:
        r = json.loads(line)
        if r["op"] == "mint":
            text = mint(r["key_id"], bytes.fromhex(r["secret_hex"]), r["claims"], bytes.fromhex(r["nonce_hex"]))
            print(json.dumps({"pass": text}))
            continue
        try:
            got = verify(parse_key_ring(r["key_ring"]), r["pass"], r["campaign_id"], r["sku_id"],
                         r["user_id"], r["now_ms"])
            print(json.dumps({"error": None, "key_id": got["key_id"], "claims": got["claims"],
                              "nonce_hex": got["nonce"].hex()}))
        except EntryPassError as e:
            print(json.dumps({"error": e.reason}))


if __name__ == "__main__":
    if sys.argv[1:] == ["--batch"]:
        batch(sys.stdin)
    elif len(sys.argv) == 2:
        problems = check_vectors(sys.argv[1])
        for p in problems:
            print("FAIL", p)
        sys.exit(1 if problems else 0)
    else:
        sys.exit(__doc__)
