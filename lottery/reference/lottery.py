#!/usr/bin/env python3
"""Reference of seckill's lottery rules v1 (lottery/doc.go), Python 3 stdlib only.
Usage: lottery.py vectors.json -- recomputes every vector, prints mismatches, exits 1 on any."""
import hashlib, hmac, json, sys
H = lambda b: hashlib.sha256(b).digest()
M = lambda key, msg: hmac.new(key, msg, hashlib.sha256).digest()

def draw(v):
    x = lambda k: bytes.fromhex(v[k])
    entries = sorted(v["entries"], key=lambda e: e["seq"])
    pool = "".join("%d,%s,%d\n" % (e["seq"], M(x("pseudonym_key"), e["user_id"].encode()).hex(), e["tier"]) for e in entries)
    root = H(pool.encode())
    seed = H(b"seckill/lottery/v1\0" + v["campaign_id"].encode() + b"\0" + v["sku_id"].encode() + b"\0"
             + x("server_seed") + x("randomness") + root)
    ranked = sorted(entries, key=lambda e: (M(seed, str(e["seq"]).encode()), e["seq"]))
    chosen, left, carry = set(), v["units"], 0
    for q in v["tiers"] or [{"tier": 0, "quota": "rest"}]:
        want = left if q["quota"] == "rest" else min(left, q["quota"] + carry)
        got = [e["seq"] for e in ranked if e["seq"] not in chosen and e["tier"] >= q["tier"]][:want]
        chosen.update(got)
        left, carry = left - len(got), want - len(got)
    rest = [e["seq"] for e in ranked if e["seq"] not in chosen]
    return {"commit": H(x("server_seed")).hex(), "pool": pool, "entries_root": root.hex(), "seed": seed.hex(),
            "order": [e["seq"] for e in ranked], "winners": [e["seq"] for e in ranked if e["seq"] in chosen],
            "waitlist": rest[:v["waitlist"]], "lost": rest[v["waitlist"]:]}

vectors, failures = json.load(open(sys.argv[1]))["vectors"], 0
for v in vectors:
    got = draw(v)
    for k, want in v["expect"].items():
        if got[k] != want:
            failures += 1
            print("%s: %s = %r, want %r" % (v["name"], k, got[k], want))
print("%d vectors, %d failures" % (len(vectors), failures))
sys.exit(1 if failures else 0)
