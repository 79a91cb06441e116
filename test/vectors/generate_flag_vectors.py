# Independent reference (Python hashlib) for the flag bucketing vectors; see docs/flags.md.
import hashlib, json, random
def bucket(s): return int(hashlib.sha1(s.encode('utf-8')).hexdigest()[:13], 16) / 2**52
def variant(key, id, variants):
    b = bucket(f"{key}.{id}.variant"); s = 0
    for v in variants:
        s += v["rolloutPct"]
        if s / 100 > b: return v["key"]
    return variants[-1]["key"]
random.seed(20240605)
variant_sets = [
  [{"key": "control", "rolloutPct": 50}, {"key": "test", "rolloutPct": 50}],
  [{"key": "a", "rolloutPct": 33}, {"key": "b", "rolloutPct": 33}, {"key": "c", "rolloutPct": 34}],
  [{"key": "off", "rolloutPct": 0}, {"key": "small", "rolloutPct": 10}, {"key": "rest", "rolloutPct": 90}],
  [{"key": "v%d" % i, "rolloutPct": 10} for i in range(10)],
  [{"key": "only", "rolloutPct": 100}],
]
keys = ["new-checkout", "beta_banner", "x", "a" * 200, "pricing-v2", "kill_switch-9"]
ids = ["user-1", "user-2", "alice@example.com", "$device:7f3c2a", "2f1c4e9a-8b7d-4e2f-9a1b-3c5d7e9f1a2b", "ünïcödé-名前", "emoji-🚀", "x" * 255, "42", " spaced id "]
out = []
for k in keys:
    for i in ids:
        vs = variant_sets[len(out) % len(variant_sets)]
        pct = random.choice([0, 1, 10, 25, 50, 75, 99, 100])
        b = bucket(f"{k}.{i}")
        out.append({"flagKey": k, "id": i, "bucket": b, "variantBucket": bucket(f"{k}.{i}.variant"),
                    "rolloutPct": pct, "inRollout": b < pct / 100, "variants": vs, "variant": variant(k, i, vs)})
doc = {
  "description": "Feature-flag bucketing vectors. Every SDK must reproduce bucket, variantBucket, inRollout and variant exactly.",
  "algorithm": {
    "bucket": "SHA-1 of the UTF-8 string; first 13 hex digits as an integer; divided by 2^52",
    "rollout": "bucket(\"<flagKey>.<id>\") < rolloutPct / 100",
    "variant": "walk variants in order keeping the integer sum S of rolloutPct; serve the first with S / 100 > bucket(\"<flagKey>.<id>.variant\")",
  },
  "generatedBy": "an independent Python hashlib implementation (not the TypeScript one under test)",
  "vectors": out,
}
print(json.dumps(doc, ensure_ascii=False, indent=1))
